// Package doccheck holds the module's documentation checks, run by its
// tests: the godoc of every package outside internal/ may not cite a file
// outside the module, name an identifier a reader of the godoc cannot see,
// or use an abbreviation it does not explain; and every Go code block of
// README.md must be part of a godoc Example, so that it compiles.
package doccheck
