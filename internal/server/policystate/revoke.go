package policystate

import (
	"fmt"

	"github.com/wharfhq/wharf/internal/core/policy"
	"github.com/wharfhq/wharf/internal/core/store"
	"github.com/wharfhq/wharf/internal/server/audit"
	"github.com/wharfhq/wharf/internal/server/revocations"
)

// Revocations are part of the policy: each one made or lifted advances the
// head (revision and version), so the signed bundle carries them
// (data.json: wharf.revocations) and its ETag changes. The revocation, the
// head, the revocation history's entry and the audit entry commit
// together.

// Audit actions of revocations.
const (
	ActionRevocationCreate = "revocation.create"
	ActionRevocationDelete = "revocation.delete"
)

// AlreadyRevokedError is a revocation of what an active one already
// revokes.
type AlreadyRevokedError struct{ Existing policy.Revocation }

func (e *AlreadyRevokedError) Error() string {
	return fmt.Sprintf("%s is already revoked by %s (%s); lift that one first to change the reason",
		RevokedObject(e.Existing), e.Existing.ID, e.Existing.Reason)
}

// TooManyRevocationsError is a revocation beyond revocations.Max.
type TooManyRevocationsError struct{ Max int }

func (e *TooManyRevocationsError) Error() string {
	return fmt.Sprintf("there are already %d revocations, the limit; lift old ones first", e.Max)
}

// RevokedObject names what r revokes: its digest, or its plugin and
// version.
func RevokedObject(r policy.Revocation) string {
	if r.Digest != "" {
		return r.Digest
	}
	return r.Plugin + " " + r.Version
}

// Revocations returns the active revocations, oldest first, with the head
// they are part of.
func (s *State[D]) Revocations() (policy.Revocations, Head, error) {
	var revs policy.Revocations
	var h Head
	err := s.st.View(func(r store.Reader) (err error) {
		if revs, err = revocations.Active(r); err != nil {
			return err
		}
		h, err = ReadHead(r)
		return err
	})
	return revs, h, err
}

// Revoke makes rv active: what an active revocation already revokes is
// *AlreadyRevokedError, one beyond revocations.Max *TooManyRevocationsError.
func (s *State[D]) Revoke(rv policy.Revocation, by Actor) (Head, error) {
	var head Head
	err := s.st.Update(func(tx store.Tx) error {
		revs, err := revocations.Active(tx)
		if err != nil {
			return err
		}
		for _, o := range revs {
			if o.Plugin == rv.Plugin && o.Version == rv.Version && o.Digest == rv.Digest {
				return &AlreadyRevokedError{Existing: o}
			}
		}
		if len(revs) >= revocations.Max {
			return &TooManyRevocationsError{Max: revocations.Max}
		}
		head, err = s.commitRevocation(tx, append(revs, rv), rv, revocations.ActionRevoke, by)
		return err
	})
	if err != nil {
		return Head{}, err
	}
	s.SetHead(head)
	return head, nil
}

// Lift lifts the active revocation id and returns it; one that is not
// active is *revocations.NotFoundError.
func (s *State[D]) Lift(id string, by Actor) (policy.Revocation, Head, error) {
	var head Head
	var gone *policy.Revocation
	err := s.st.Update(func(tx store.Tx) error {
		revs, err := revocations.Active(tx)
		if err != nil {
			return err
		}
		kept := revs[:0:0]
		gone = nil
		for i := range revs {
			if revs[i].ID == id {
				gone = &revs[i]
				continue
			}
			kept = append(kept, revs[i])
		}
		if gone == nil {
			return &revocations.NotFoundError{ID: id}
		}
		head, err = s.commitRevocation(tx, kept, *gone, revocations.ActionLift, by)
		return err
	})
	if err != nil {
		return policy.Revocation{}, Head{}, err
	}
	s.SetHead(head)
	return *gone, head, nil
}

// commitRevocation writes the change, the new policy head, a history entry
// and an audit entry in tx.
func (s *State[D]) commitRevocation(tx store.Tx, revs policy.Revocations, rv policy.Revocation, action string, by Actor) (Head, error) {
	layers, err := ReadLayers(tx)
	if err != nil {
		return Head{}, err
	}
	revocations.Sort(revs)
	if action == revocations.ActionLift {
		err = revocations.Lift(tx, rv.ID)
	} else {
		err = revocations.Put(tx, rv)
	}
	if err != nil {
		return Head{}, err
	}
	head, err := AdvanceHead(tx, layers, revs)
	if err != nil {
		return head, err
	}
	now := s.opt.Now().UTC()
	if err := revocations.AppendHistory(tx, revocations.HistoryEntry{Time: now, Action: action, Revocation: rv,
		PolicyVersion: head.Version, Revision: head.Revision, Actor: by.ID}); err != nil {
		return head, err
	}
	auditAction := ActionRevocationCreate
	if action == revocations.ActionLift {
		auditAction = ActionRevocationDelete
	}
	return head, audit.Append(tx, audit.Entry{Time: now, Action: auditAction, Actor: by.ID, Role: by.Role, Object: rv.ID,
		Detail: map[string]any{"plugin": rv.Plugin, "version": rv.Version, "digest": rv.Digest, "reason": rv.Reason,
			"policyVersion": head.Version, "revision": head.Revision}})
}
