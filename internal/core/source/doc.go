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
// Entries are written relative to descriptors of the directories the fetch
// made (openat, mkdirat, symlinkat with the last path element only, never
// following a link), so nothing resolves a path from outside the
// destination; each file is created exclusively, written once and hashed
// as it is written (Result.Written). By default Fetch does not make the
// result durable or read-only, and package cache does that after verifying
// the content digest; Request.Durable and Request.ReadOnly have Fetch do
// both as it writes (each file fsynced and closed once, each directory
// sealed and fsynced once complete), so that the cache can take the tree
// as the version directory without another pass over it. Where Linux's
// syncfs is safe and cheap (SyncAuto), one syncfs of the file system once
// the tree is complete stands in for the fsyncs: on ext4 each fsync of a
// new file commits the journal, and an install of 50 plugins made about
// 750 of them.
package source
