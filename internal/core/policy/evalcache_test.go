package policy

import (
	"fmt"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/topdown"
	"pgregory.net/rapid"
)

// evalCache answers every Get as OPA's own virtual cache does, through
// pushes, pops, overwrites, undefined entries, frames long enough to be
// hashed, and a caller that reuses the slice of a ref after Put.
func TestEvalCacheMatchesOPA(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ours := getEvalCache()
		defer ours.release()
		theirs := topdown.NewVirtualCache()
		refs := make([]ast.Ref, 40)
		for i := range refs {
			refs[i] = ast.MustParseRef(fmt.Sprintf("data.p.r%d[%d]", i%7, i))
		}
		scratch := make(ast.Ref, 0, 8)
		depth := 0
		for _, op := range rapid.SliceOfN(rapid.IntRange(0, 99), 1, 300).Draw(t, "ops") {
			ref := refs[op%len(refs)]
			switch {
			case op < 50:
				var v *ast.Term
				if op%3 != 0 {
					v = ast.IntNumberTerm(op)
				}
				scratch = append(scratch[:0], ref...)
				ours.Put(scratch, v)
				theirs.Put(append(ast.Ref(nil), ref...), v)
				scratch[len(scratch)-1] = ast.StringTerm("clobbered")
			case op < 90:
				g1, u1 := ours.Get(ref)
				g2, u2 := theirs.Get(ref)
				if u1 != u2 || (g1 == nil) != (g2 == nil) || g1 != nil && !g1.Equal(g2) {
					t.Fatalf("Get(%v) = %v,%v; OPA's cache: %v,%v", ref, g1, u1, g2, u2)
				}
			case op < 95:
				ours.Push()
				theirs.Push()
				depth++
			default:
				if depth > 0 {
					ours.Pop()
					theirs.Pop()
					depth--
				}
			}
		}
		if len(ours.Keys()) != len(theirs.Keys()) {
			t.Fatalf("Keys: %d, OPA's cache %d", len(ours.Keys()), len(theirs.Keys()))
		}
	})
}
