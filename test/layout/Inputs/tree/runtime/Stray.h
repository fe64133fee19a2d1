// Stray.
