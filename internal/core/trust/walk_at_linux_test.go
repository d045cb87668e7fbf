package trust

// deepWalk is a tree depth past the walk's limit of held descriptors, so
// that the deepest directories go by path.
const deepWalk = maxDepthAt + 3
