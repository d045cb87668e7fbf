package channel

import "fmt"

// Target is who may list and clone a channel: tokens with one of Groups or
// one of Labels (key=value), and admins. The server checks the names'
// form (tokens.Target) before a definition gets here.
type Target struct {
	Groups []string `json:"groups,omitempty"`
	Labels []string `json:"labels,omitempty"`
}

// maxTargeted bounds a target's groups and labels.
const maxTargeted = 32

// Empty reports whether t targets nobody in particular (everyone).
func (t *Target) Empty() bool { return t == nil || len(t.Groups) == 0 && len(t.Labels) == 0 }

// validateTarget bounds the target, drops an empty one and refuses a
// public targeted channel (a channel anyone may clone has no audience).
func (d *Definition) validateTarget() error {
	if d.Target.Empty() {
		d.Target = nil
		return nil
	}
	if len(d.Target.Groups) > maxTargeted || len(d.Target.Labels) > maxTargeted {
		return &FieldError{Field: "target", Err: fmt.Errorf("more than %d groups or labels", maxTargeted)}
	}
	if d.Public {
		return &FieldError{Field: "target", Err: fmt.Errorf("a public channel can be cloned by anyone; drop public or the target")}
	}
	d.Target.Groups = sortedUnique(d.Target.Groups)
	d.Target.Labels = sortedUnique(d.Target.Labels)
	return nil
}
