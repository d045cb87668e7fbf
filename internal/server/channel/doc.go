// Package channel builds wharf's channels: the plugins the server's policy
// allows, served to stock Claude Code as an ordinary git marketplace.
//
// A channel is a Definition (which marketplaces and plugins it draws from;
// the built-in "approved" draws from all of them) kept in the store with its
// history. Plan decides its entries from the catalog, the policy, the
// revocations and the approvals (Input.Admit: a held version is replaced
// by the approved one's copy, Vendor.ByDigest), and says for each plugin
// left out why. Each entry's tree is
// vendored from the server's own verified copy (Vendor: fetched from the
// origin once per marketplace revision, its w1: digest recorded and checked
// again when it is used), never a pointer to the origin. Builder writes the
// entries as a Claude Code marketplace (.claude-plugin/marketplace.json and
// plugins/<name>/) into a git repository with go-git: the same entries and
// digests give the same tree and the same commit (fixed author, time derived
// from the history), a rebuild is a child commit of the previous head, and
// the head and every object are recorded in the store, so that every replica
// serves the same commit.
package channel
