package scanner

import (
	"math/rand/v2"
	"testing"
)

// TestFeatureMasks: the assembly classifies every byte at every place of
// a block as featureMasksGo does.
func TestFeatureMasks(t *testing.T) {
	if !featureMasksAsm {
		t.Skip("no AVX2: featureMasksGo is the only classifier")
	}
	r := rand.New(rand.NewPCG(3, 4))
	b := make([]byte, 64*8)
	for n := range 2000 {
		for i := range b {
			b[i] = byte(r.IntN(256))
			if n%2 == 0 { // bytes of every class, not only of the high half
				const classes = "aZz0 9\t\n\r=:_-.%+/,\x80\xff\x00`{@[/\\"
				b[i] = classes[r.IntN(len(classes))]
			}
		}
		var got, want [8]blockMasks
		featureMasksAVX2(&b[0], len(got), &got[0])
		featureMasksGo(&b[0], len(want), &want[0])
		if got != want {
			for k := range got {
				if got[k] != want[k] {
					t.Fatalf("block %q: got %+v, want %+v", b[k*64:k*64+64], got[k], want[k])
				}
			}
		}
	}
}
