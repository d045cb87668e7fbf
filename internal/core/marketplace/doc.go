// Package marketplace knows where plugin marketplaces come from and keeps a
// local copy of each.
//
// A marketplace comes from a plugin.MarketplaceSource: a GitHub repository
// (owner/repo[@ref]), a git URL (https://, ssh://, git@host:path, file://,
// with #ref), a local directory or marketplace.json file (read in place,
// never copied or deleted), or an https:// URL of a marketplace.json. This
// package fetches each kind; the type, its forms and its validation are
// plugin's.
//
// A Manager adds, updates, lists and removes known marketplaces, recorded in
// the store's "marketplaces" bucket. Git sources are cloned shallow,
// single-branch and without tags into a temporary sibling directory that is
// renamed into place only when the clone and its marketplace.json are good;
// an update fetches and hard-resets to the remote ref (or pinned commit) and
// goes back to the previous commit if the new marketplace.json does not
// parse. Every network step has a deadline (Options.GitTimeout). A Gate
// (for example managed policy) is asked before any network or disk access.
//
// Two parts of a new clone are wharf's own, not go-git's, because go-git
// offers no way to do them in one pass (docs/performance.md, "Git
// paths"): the received pack is indexed by packindex.go, which inflates
// each object once where go-git's indexer inflates it two or three
// times, and writes the pack and .idx go-git would; and the work tree is
// written by checkout.go and streamcheckout.go as the objects arrive,
// with go-git's tree-name checks (checkTree) and the index go-git's
// checkout writes. The transport, the storage, a pinned-commit clone and
// the update of a clone that is not clean stay go-git's.
//
// A Catalog is the parsed marketplace.json of every known marketplace: search,
// lookup by plugin ID, and the resolved source of each entry.
package marketplace
