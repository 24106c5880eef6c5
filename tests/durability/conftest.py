"""The durability tests: crash anywhere, resume, many concurrent runs on one store."""
