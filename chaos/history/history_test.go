package history

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hustings/hustings/events"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// at is t0 + ms milliseconds.
func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

var lock = Key{"lock", 0}

func el(ms int, node string, tok events.Token) Event {
	return Event{Time: at(ms), Node: node, Key: lock, Kind: Elected, Token: tok}
}

func rv(ms int, node string, tok events.Token) Event {
	return Event{Time: at(ms), Node: node, Key: lock, Kind: Revoked, Token: tok, Reason: "resigned"}
}

func wr(ms int, node string, tok events.Token, ok bool) Write {
	return Write{Time: at(ms), Node: node, Key: lock, Token: tok, Accepted: ok}
}

var cfg = Config{Crash: 2500 * time.Millisecond, Graceful: 50 * time.Millisecond, Settle: 4 * time.Second}

// good is a run with a crash, a graceful stop and a pause, all handled
// correctly: a, killed at 1000 while leading; b elected at 3000, stopped at
// 5000, c elected 10 ms later; c paused from 6000 to 10000 and revoked
// late, at 10001, while d was elected at 8000; c's write at 10001 refused.
func good() History {
	return History{
		Events: []Event{
			el(0, "a", 1),
			el(3000, "b", 5), rv(5002, "b", 5),
			el(5010, "c", 7), rv(10001, "c", 7),
			el(8000, "d", 9), rv(12000, "d", 9),
		},
		Faults: []Fault{
			{Kill, "a", at(1000), at(1000)},
			{Stop, "b", at(5000), at(5000)},
			{Pause, "c", at(6000), at(10000)},
			{Stall, "x", at(5001), at(5009)}, // another node's stall disturbs nothing
		},
		Writes: []Write{
			wr(10, "a", 1, true), wr(3001, "b", 5, true), wr(5020, "c", 7, true),
			wr(8001, "d", 9, true), wr(10001, "c", 7, false),
		},
		Settles: []Settle{{Healed: at(10000), Agreed: at(11000)}},
		Leaks:   map[string]int{"b": 0},
	}
}

func TestGoodHistory(t *testing.T) {
	r := Check(good(), cfg)
	if len(r.Violations) != 0 {
		t.Fatalf("violations in a good history: %v", r.Violations)
	}
	if want := []time.Duration{2000 * time.Millisecond}; !slices.Equal(r.Crash, want) {
		t.Errorf("crash failovers %v, want %v", r.Crash, want)
	}
	if want := []time.Duration{10 * time.Millisecond}; !slices.Equal(r.Graceful, want) {
		t.Errorf("graceful failovers %v, want %v", r.Graceful, want)
	}
	if r.Excused != 1 || r.StaleRejected != 1 || len(r.Terms) != 4 || r.Faults[Pause] != 1 {
		t.Errorf("excused %d, stale %d, terms %d, pauses %d; want 1, 1, 4, 1", r.Excused, r.StaleRejected, len(r.Terms), r.Faults[Pause])
	}
	if a := r.Terms[len(r.Terms)-1]; !a.Died || a.Node != "a" || !a.To.Equal(at(1000)) {
		t.Errorf("a's term %+v, want ended by its death at 1000", a)
	}
}

// TestBadHistories breaks the good history one way at a time; each must
// give exactly the rule it breaks.
func TestBadHistories(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rule   string
		change func(h *History)
	}{
		{"elected twice", RulePairing, func(h *History) { h.Events = append(h.Events, el(12001, "d", 11)) }},
		{"revoked twice", RulePairing, func(h *History) { h.Events = append(h.Events, rv(12001, "d", 9)) }},
		{"revoked with another token", RulePairing, func(h *History) { h.Events[6] = rv(12000, "d", 8) }},
		{"never revoked, not killed", RulePairing, func(h *History) { h.Events = h.Events[:6] }},
		{"token back", RuleTokens, func(h *History) { h.Events[5].Token, h.Events[6].Token, h.Writes = 6, 6, h.Writes[:3] }},
		{"equal tokens", RuleTokens, func(h *History) { h.Events[5].Token, h.Events[6].Token, h.Writes = 7, 7, h.Writes[:3] }},
		{"overlap without pause", RuleOverlap, func(h *History) { h.Faults = h.Faults[:2] }},
		{"pause of the newer one excuses nothing", RuleOverlap, func(h *History) { h.Faults[2].Node = "d" }},
		{"overlap after a revocation", RuleOverlap, func(h *History) { h.Events[2] = rv(5050, "b", 5) }},
		{"stale write accepted", RuleFence, func(h *History) { h.Writes[4].Accepted = true }},
		{"current write refused", RuleFence, func(h *History) { h.Writes[3].Accepted = false }},
		{"write without a term", RuleFence, func(h *History) { h.Writes = append(h.Writes, wr(12001, "e", 99, true)) }},
		{"one token, two writers", RuleFence, func(h *History) {
			h.Writes = append(h.Writes, Write{at(12150), "e", lock, 9, true})
			h.Events = append(h.Events, Event{Time: at(1), Node: "e", Key: Key{"other", 0}, Kind: Elected, Token: 9}, Event{Time: at(2), Node: "e", Key: Key{"other", 0}, Kind: Revoked, Token: 9})
			h.Events = append(h.Events, Event{Time: at(12100), Node: "e", Key: lock, Kind: Elected, Token: 9}, Event{Time: at(12200), Node: "e", Key: lock, Kind: Revoked, Token: 9})
		}},
		{"slow crash failover", RuleCrash, func(h *History) { h.Events[1].Time = at(3600) }},
		{"no leader after a crash", RuleCrash, func(h *History) {
			h.Events, h.Faults, h.Writes = h.Events[:1], h.Faults[:1], h.Writes[:1]
		}},
		{"slow handover", RuleGraceful, func(h *History) { h.Events[3].Time = at(5051) }},
		{"never settled", RuleSettle, func(h *History) { h.Settles[0].Agreed = time.Time{} }},
		{"settled late", RuleSettle, func(h *History) { h.Settles[0].Agreed = at(14001) }},
		{"leak", RuleLeak, func(h *History) { h.Leaks["b"] = 2 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := good()
			tc.change(&h)
			r := Check(h, cfg)
			var rules []string
			for _, v := range r.Violations {
				rules = append(rules, v.Rule)
			}
			if !slices.Contains(rules, tc.rule) {
				t.Fatalf("violations %v, want one of rule %q", r.Violations, tc.rule)
			}
			for _, v := range r.Violations {
				if v.Rule != tc.rule && !(tc.name == "one token, two writers" && v.Rule == RuleTokens) {
					t.Errorf("unexpected %v", v)
				}
			}
		})
	}
}

// TestFailoverDuringAnotherFault is not measured: the other fault may
// explain a slow failover.
func TestFailoverDuringAnotherFault(t *testing.T) {
	h := good()
	h.Faults = append(h.Faults, Fault{Blackhole, "b", at(1500), at(2500)})
	h.Events[1].Time = at(3600) // slow, but during the blackhole's window
	h.Writes[1].Time = at(3601)
	r := Check(h, cfg)
	if len(r.Crash) != 0 {
		t.Fatalf("crash failovers %v measured during a blackhole", r.Crash)
	}
	if len(r.Violations) != 0 {
		t.Fatalf("violations %v", r.Violations)
	}
}

func TestBeliefsAgree(t *testing.T) {
	other := Key{"group", 1}
	evs := []Event{
		el(0, "a", 1), rv(10, "a", 1), el(20, "b", 2),
		{Time: at(5), Node: "c", Key: other, Kind: Elected, Token: 4},
	}
	bs := Beliefs(evs)
	if len(bs) != 2 || !slices.Equal(bs[lock], []Holding{{"b", 2}}) || !slices.Equal(bs[other], []Holding{{"c", 4}}) {
		t.Fatalf("beliefs %v", bs)
	}
	if err := Agree(bs, map[Key]Holding{lock: {"b", 2}, other: {"c", 4}}); err != nil {
		t.Fatalf("agreeing state: %v", err)
	}
	for _, tc := range []struct {
		name    string
		holders map[Key]Holding
		want    string
	}{
		{"zombie leader", map[Key]Holding{lock: {"b", 2}}, "group[1] is free"},
		{"other holder", map[Key]Holding{lock: {"a", 3}, other: {"c", 4}}, "held by a (token 3)"},
		{"other token", map[Key]Holding{lock: {"b", 3}, other: {"c", 4}}, "held by b (token 3)"},
		{"held, nobody believes", map[Key]Holding{lock: {"b", 2}, other: {"c", 4}, {"x", 0}: {"d", 1}}, "x[0] is held by d"},
	} {
		err := Agree(bs, tc.holders)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Agree = %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	two := Beliefs(append(evs, el(30, "e", 2)))
	if err := Agree(two, map[Key]Holding{lock: {"b", 2}, other: {"c", 4}}); err == nil {
		t.Error("two believers of one lock agree with the backend")
	}
}

// TestFaultAfterFailover: a fault after the next leader was elected does
// not stop the failover from being measured.
func TestFaultAfterFailover(t *testing.T) {
	h := good()
	h.Faults = append(h.Faults, Fault{Restart, "", at(3100), at(3200)})
	r := Check(h, cfg)
	if len(r.Crash) != 1 || len(r.Violations) != 0 {
		t.Fatalf("crash failovers %v, violations %v; want one measured, none", r.Crash, r.Violations)
	}
}

// TestTamperedLock: a leader whose lock is deleted behind its back may
// overlap its successor until its next renewal finds the lock gone, and no
// longer than Config.Tamper after the deletion.
func TestTamperedLock(t *testing.T) {
	withTamper := func(revokedAt int, on string) History {
		h := good()
		h.Events[6] = rv(revokedAt, "d", 9) // d leads from 8000
		h.Events = append(h.Events, el(11050, "e", 11), rv(13000, "e", 11))
		h.Faults = append(h.Faults, Fault{Tamper, on, at(11000), at(11000)})
		h.Writes = append(h.Writes, wr(11060, "e", 11, true))
		return h
	}
	tcfg := cfg
	tcfg.Tamper = 700 * time.Millisecond
	r := Check(withTamper(11600, "d"), tcfg)
	if len(r.Violations) != 0 || r.Tampered != 1 {
		t.Fatalf("revoked 600 ms after the tamper: violations %v, tampered %d; want none, 1", r.Violations, r.Tampered)
	}
	for name, h := range map[string]History{
		"revoked too late":           withTamper(11800, "d"),
		"another node's lock tamper": withTamper(11600, "c"),
	} {
		r := Check(h, tcfg)
		if len(r.Violations) != 1 || r.Violations[0].Rule != RuleOverlap {
			t.Errorf("%s: violations %v, want one overlap", name, r.Violations)
		}
	}
	// Net of a server stall of 200 ms after the tamper, 800 ms is in time.
	late := withTamper(11800, "d")
	late.Faults = append(late.Faults, Fault{Stall, Server, at(11100), at(11300)})
	tcfg.NetOfOutages = true
	if r := Check(late, tcfg); len(r.Violations) != 0 || r.Tampered != 1 || r.Net != 1 {
		t.Errorf("revoked 800 ms after the tamper, 200 ms of it a server stall: violations %v, tampered %d, net %d; want none, 1, 1", r.Violations, r.Tampered, r.Net)
	}
}

// TestNetOfOutages holds a slow failover and a slow settle to their
// bounds in wall-clock time, then net of the server's and the harness's
// stalls within them: only the time they stalled is taken away, and only
// when the config says so.
func TestNetOfOutages(t *testing.T) {
	h := good()
	// a killed at 1000; b elected at 3000 in good(): make it 5000, after
	// 2.5 s of stalls (overlapping ones count once), settle 6 s.
	h.Events[1].Time = at(5000)
	h.Faults = append(h.Faults,
		Fault{Stall, Server, at(1500), at(3000)},
		Fault{Stall, Harness, at(2500), at(3500)},
		Fault{Stall, "c", at(3600), at(4600)}, // a node's own stall is not an outage
		Fault{Stall, Server, at(10500), at(13000)},
	)
	h.Settles = []Settle{{Healed: at(10000), Agreed: at(16000)}}

	r := Check(h, cfg)
	if rules := rulesOf(r); !slices.Equal(rules, []string{RuleCrash, RuleSettle}) {
		t.Fatalf("wall-clock check broke %v, want [crash settle]", r.Violations)
	}
	if r.Outage != 4500*time.Millisecond || r.Net != 0 {
		t.Errorf("outage %v, net %d; want 4.5s, 0", r.Outage, r.Net)
	}

	net := cfg
	net.NetOfOutages = true
	r = Check(h, net)
	if len(r.Violations) != 0 || r.Net != 2 {
		t.Errorf("net of outages: violations %v, net %d; want none, 2", r.Violations, r.Net)
	}
	if want := []time.Duration{4 * time.Second}; !slices.Equal(r.Crash, want) {
		t.Errorf("crash failovers %v, want the wall-clock %v", r.Crash, want)
	}

	// 4 s minus 1 s of outage is still over the 2.5 s bound.
	h.Faults[len(h.Faults)-4].From = at(2500)
	if rules := rulesOf(Check(h, net)); !slices.Equal(rules, []string{RuleCrash}) {
		t.Errorf("a failover over its bound net of outages broke %v, want [crash]", rules)
	}
}

func rulesOf(r Report) []string {
	var out []string
	for _, v := range r.Violations {
		out = append(out, v.Rule)
	}
	return out
}
