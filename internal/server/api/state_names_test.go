package api

import (
	"github.com/wharfhq/wharf/internal/server/policystate"
	"github.com/wharfhq/wharf/internal/server/sessions"
)

// The server states' names as the tests of this package use them.
const (
	keptBundles     = policystate.KeptBundles
	bucketBundle    = policystate.BundleBucket
	bucketSessions  = sessions.Bucket
	sessionIDPrefix = sessions.IDPrefix
)

func policyVersion(ls []Layer) string { return policystate.Version(ls) }
