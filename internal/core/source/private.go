package source

import "github.com/wharfhq/wharf/internal/core/fetch"

// AllowPrivateEnv names the switch that lets plugin sources reach loopback,
// link-local and private addresses: WHARF_ALLOW_PRIVATE_SOURCES=1 (see
// fetch.AllowPrivateEnv). Archive URLs, npm registries and tarballs, and
// git URLs named by a marketplace entry must resolve to public addresses;
// hosts the operator configured (the npm registry, the GitHub host) are
// trusted as they are.
const AllowPrivateEnv = fetch.AllowPrivateEnv

// ErrPrivateAddress: a plugin source's host is, or resolves to, a loopback,
// link-local or private address, and AllowPrivateEnv is not set.
var ErrPrivateAddress = fetch.ErrPrivateAddress
