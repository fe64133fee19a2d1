// Gen.
