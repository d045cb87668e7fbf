// Package source fetches one plugin's source tree into an empty directory.
//
// It implements every `source` form of a marketplace entry (FORMATS.md):
// a path relative to the marketplace clone, a GitHub repository, a git URL,
// one directory of a git repository, an npm package and a zip archive. Every
// input is hostile: entry names, symlinks, archive sizes and entry counts are
// checked before anything is written, and nothing is ever written outside the
// destination directory. Git trees are read from the commit's tree objects
// (never from a checkout), so the result never contains a .git directory.
//
// Fetch does not make the result durable or read-only; package cache does that
// after verifying the content digest.
package source
