package resolver

// CrossAllowed is the cross-marketplace dependency rule: a plugin of one
// marketplace may depend on a plugin of marketplace to only when its own
// marketplace lists to in allowCrossMarketplaceDependenciesOn (allowOn).
// A dependency inside one marketplace needs no listing. The resolver, the
// installer's catalog, the server's catalog and channel builds all decide
// with it.
func CrossAllowed(allowOn []string, from, to string) bool {
	if from == to {
		return true
	}
	for _, m := range allowOn {
		if m == to {
			return true
		}
	}
	return false
}
