#!/bin/sh
# Count the functions (and types) that carry each of wharf's one-owner
# concepts: the revocation text, the version of an unversioned plugin, the
# namespaced component name, the cross-marketplace dependency rule, the
# message of a plugin enabled but not installed, the durable tree and the
# staged rename, and the struct type describing a marketplace source
# (plugin.MarketplaceSource). The counting is internal/layering's
# TestConceptOwners (go/ast over the module's non-test Go files); it fails
# when any of them has a second owner.
#
# usage: bench/owners.sh
set -eu
cd "$(dirname "$0")/.."
go test ./internal/layering -run '^TestConceptOwners$' -count=1 -v |
	sed -n 's/.*owners of \(.*\): \([0-9][0-9]*\) \(.*\)/\2	\1	\3/p'
