// A stream writer.
