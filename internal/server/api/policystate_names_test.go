package api

import "github.com/wharfhq/wharf/internal/server/policystate"

// The policy state's names as the tests of this package use them.
const (
	keptBundles  = policystate.KeptBundles
	bucketBundle = policystate.BundleBucket
)

func policyVersion(ls []Layer) string { return policystate.Version(ls) }
