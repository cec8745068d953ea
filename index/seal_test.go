package index

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestPermute: permute puts a block's records in the order given, in
// place, as a copy made in that order would hold them (seal relies on it:
// the order of a block's records makes its term table).
func TestPermute(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for n := range blockCap + 1 {
		for range 20 {
			hs := make([]Hit, n)
			for i := range hs {
				hs[i] = Hit{ID: strconv.Itoa(i), Message: "m" + strconv.Itoa(i), Offset: int64(i)}
			}
			order := r.Perm(n)
			want := make([]Hit, n)
			for i, o := range order {
				want[i] = hs[o]
			}
			permute(hs, slices.Clone(order))
			for i := range hs {
				if hs[i].ID != want[i].ID || hs[i].Message != want[i].Message || hs[i].Offset != want[i].Offset {
					t.Fatalf("n=%d order %v: record %d is %s, want %s", n, order, i, hs[i].ID, want[i].ID)
				}
			}
		}
	}
}

// TestBlockTermsFinish: a block's terms moved out of the writer's buffers
// are those gathered, and the next block gathered in the same buffers
// leaves them alone.
func TestBlockTermsFinish(t *testing.T) {
	var hs []Hit
	for _, e := range trickyEvents() {
		hs = append(hs, HitFromEvent(e))
	}
	var sc scratch
	var blocks []*blockTerms
	var want [][nTermFields][]int32
	var wantMasks [][nTermFields][]uint64
	for start := 0; start < len(hs); start += blockCap / 2 {
		block := hs[start:min(start+blockCap/2, len(hs))]
		b := newBlockTerms(&sc.dict, &sc)
		for i := range block {
			b.record(&block[i], 1<<i)
		}
		var ids [nTermFields][]int32
		var masks [nTermFields][]uint64
		for f := range b.ids {
			ids[f], masks[f] = slices.Clone(b.ids[f]), slices.Clone(b.masks[f])
		}
		b.finish()
		blocks, want, wantMasks = append(blocks, b), append(want, ids), append(wantMasks, masks)
	}
	if len(blocks) < 2 {
		t.Fatalf("%d blocks: want several", len(blocks))
	}
	for j, b := range blocks {
		for f := range b.ids {
			if !slices.Equal(b.ids[f], want[j][f]) || !slices.Equal(b.masks[f], wantMasks[j][f]) {
				t.Errorf("block %d field %s: terms %v masks %v, want %v %v", j, termFields[f], b.ids[f], b.masks[f], want[j][f], wantMasks[j][f])
			}
		}
	}
}
