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
// A Catalog is the parsed marketplace.json of every known marketplace: search,
// lookup by plugin ID, and the resolved source of each entry.
package marketplace
