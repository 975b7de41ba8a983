package elector

import (
	"testing"
	"time"

	"github.com/hustings/hustings/strategy"
)

func TestJudge(t *testing.T) {
	members := []strategy.Candidate{
		{ID: "a", Order: 1, Score: 9},
		{ID: "b", Order: 2, Score: 5},
		{ID: "c", Order: 3, Score: 1},
	}
	tests := []struct {
		name    string
		me      string
		holders []string
		want    verdict
	}{
		{"top and free", "a", []string{"", ""}, verdict{preferred: true, free: true}},
		{"second of two slots", "b", []string{"a", ""}, verdict{preferred: true, free: true}},
		{"third waits", "c", []string{"a", ""}, verdict{free: true}},
		{"third holds, b has none", "c", []string{"a", "c"}, verdict{outranked: true}},
		{"third holds, a has none", "c", []string{"b", "c"}, verdict{outranked: true}},
		{"holding in the top", "b", []string{"b", "c"}, verdict{preferred: true}},
		{"all held", "a", []string{"a", "b"}, verdict{preferred: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			me := strategy.Candidate{ID: tt.me}
			got, err := judge(strategy.Score(), "g", view{members: members, holders: tt.holders}, me, 2)
			if err != nil || got != tt.want {
				t.Fatalf("judge = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestJudgeCountsUnregisteredSelfLast(t *testing.T) {
	members := []strategy.Candidate{{ID: "a", Order: 1}, {ID: "b", Order: 2}}
	got, err := judge(strategy.FIFO(), "g", view{members: members, holders: []string{"", ""}}, strategy.Candidate{ID: "z"}, 2)
	if err != nil || got.preferred {
		t.Fatalf("an unregistered candidate ranked within the top 2 by FIFO: %+v, %v", got, err)
	}
	dup := append(members, strategy.Candidate{ID: "a", Order: 7})
	got, err = judge(strategy.FIFO(), "g", view{members: dup, holders: []string{"", ""}}, strategy.Candidate{ID: "a"}, 1)
	if err != nil || !got.preferred {
		t.Fatalf("a listed twice (replacing its session) lost its place: %+v, %v", got, err)
	}
}

func TestGateTimes(t *testing.T) {
	g := &gate{cfg: &Config{Patience: 10 * time.Second, Preempt: 5 * time.Second}}
	t0 := time.Unix(1000, 0)
	g.apply(verdict{free: true}, false, t0)
	if g.eligible(t0.Add(9 * time.Second)) {
		t.Fatal("eligible before the patience ran out")
	}
	if !g.eligible(t0.Add(10 * time.Second)) {
		t.Fatal("not eligible once the patience ran out")
	}
	g.apply(verdict{}, false, t0.Add(11*time.Second)) // slot taken meanwhile
	if g.eligible(t0.Add(30 * time.Second)) {
		t.Fatal("eligible with no free slot")
	}
	g.apply(verdict{outranked: true}, true, t0)
	g.apply(verdict{outranked: true}, true, t0.Add(4*time.Second))
	if g.shouldYield(t0.Add(4 * time.Second)) {
		t.Fatal("yields before the hysteresis")
	}
	if !g.shouldYield(t0.Add(5 * time.Second)) {
		t.Fatal("does not yield after the hysteresis")
	}
	g.apply(verdict{}, true, t0.Add(6*time.Second))
	if g.shouldYield(t0.Add(60 * time.Second)) {
		t.Fatal("still yields after being out-ranked stopped")
	}
}

func TestEpoch(t *testing.T) {
	g := &gate{cfg: &Config{Rotation: time.Minute}}
	a := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	if g.epoch(a) != g.epoch(a.Add(40*time.Second)) || g.epoch(a) == g.epoch(a.Add(time.Minute)) {
		t.Fatal("epochs do not follow the rotation period")
	}
	if (&gate{cfg: &Config{}}).epoch(a) != 0 {
		t.Fatal("epoch moves without a rotation")
	}
}
