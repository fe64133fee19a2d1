// Fmt.
