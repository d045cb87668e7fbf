package marketplace

// ManifestPath is where a marketplace keeps its catalog, relative to its root.
const ManifestPath = ".claude-plugin/marketplace.json"
