// Package api is wharf's HTTP server: a versioned JSON API under /v1 for the
// catalog of known marketplaces, dependency resolution, layered policy (with
// a signed OPA bundle for agents that enforce policy offline), content
// verification, an append-only audit log and bearer tokens with roles.
//
// The server keeps its own state (tokens, policy layers and their history,
// audit, signing key) in a store.Store, so that replicas over a shared store
// are interchangeable. Everything else is reached through the small consumer
// interfaces in deps.go (Catalog, PolicyCompiler, Verifier), which adapters
// satisfy with the marketplace, policy and trust packages; closures come
// from the resolver package.
//
// Channels (channel.go) publish what the policy allows as git marketplaces
// that stock Claude Code adds: the routes under /v1/channels manage and
// describe them, and /git/<name>.git serves each over git's smart HTTP
// protocol (package githttp), with any valid token as the basic-auth
// password unless the channel is public.
//
// Every route, its handler and the roles allowed to call it are written in
// one table (routes.go); the authorization middleware reads only that table.
package api
