package main

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hustings/hustings/backends/etcd/etcdtest"
	"github.com/hustings/hustings/backends/nats/natstest"
	"github.com/hustings/hustings/backends/postgres/pgtest"
	"github.com/hustings/hustings/backends/redis/redistest"
	"github.com/hustings/hustings/backends/zookeeper/zktest"
)

// TestScenarios runs every scenario on the memory backend: each must keep
// its promise (a nil error) and tell it in its narration.
func TestScenarios(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check func(t *testing.T, out string)
	}{
		{"batch", scenarioCheckBatch},
		{"migration", scenarioCheckMigration},
		{"poller", scenarioCheckPoller},
		{"cache-warmer", scenarioCheckCacheWarmer},
		{"tenants", scenarioCheckTenants},
		{"operator", scenarioCheckOperator},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := runScenario(t.Context(), []string{tc.name, "--backend", "memory"}, &out, &out)
			if err != nil {
				t.Fatalf("scenario %s: %v\n%s", tc.name, err, out.String())
			}
			tc.check(t, out.String())
			if t.Failed() {
				t.Logf("output:\n%s", out.String())
			}
		})
	}
}

// TestScenarioList checks the table: the six scenarios, in order, in the help.
func TestScenarioList(t *testing.T) {
	want := []string{"batch", "migration", "poller", "cache-warmer", "tenants", "operator"}
	if got := scenarioNames(); !slices.Equal(got, want) {
		t.Errorf("scenarios %v, want %v", got, want)
	}
	var out bytes.Buffer
	if err := runScenario(t.Context(), []string{"--help"}, &out, &out); err != nil {
		t.Fatal(err)
	}
	for _, name := range want {
		if !strings.Contains(out.String(), "  "+name+" ") {
			t.Errorf("help lacks %q:\n%s", name, out.String())
		}
	}
	if err := runScenario(t.Context(), []string{"bogus"}, &out, &out); err == nil {
		t.Error("an unknown scenario ran")
	}
}

// scenarioCheckBatch: at least batchWindows windows, each run exactly once.
func scenarioCheckBatch(t *testing.T, out string) {
	windows := regexp.MustCompile(`window \S+: (\d+) run\(s\)`).FindAllStringSubmatch(out, -1)
	if len(windows) < batchWindows {
		t.Errorf("%d windows reported, want at least %d", len(windows), batchWindows)
	}
	for _, w := range windows {
		if w[1] != "1" {
			t.Errorf("%q: want exactly 1 run", w[0])
		}
	}
	if runs := strings.Count(out, "runs the report for window"); runs != len(windows) {
		t.Errorf("%d runs for %d windows", runs, len(windows))
	}
}

// scenarioCheckMigration: one migrator, four replicas that skipped and
// waited, five that serve.
func scenarioCheckMigration(t *testing.T, out string) {
	for what, want := range map[string]int{
		"and migrates to v42":              1,
		"skipped: another replica is":      4,
		"sees v42 in the marker":           5,
		"the migration ran 1 time(s), by ": 1,
	} {
		if got := strings.Count(out, what); got != want {
			t.Errorf("%q appears %d times, want %d", what, got, want)
		}
	}
}

// scenarioCheckPoller: three terms, tokens 1, 2, 3, and never two polls at
// once.
func scenarioCheckPoller(t *testing.T, out string) {
	elected := regexp.MustCompile(`elected\s+webhook-poller\s+(\d+)`).FindAllStringSubmatch(out, -1)
	var tokens []string
	for _, e := range elected {
		tokens = append(tokens, e[1])
	}
	if !slices.Equal(tokens, []string{"1", "2", "3"}) {
		t.Errorf("terms with tokens %v, want [1 2 3]", tokens)
	}
	if !strings.Contains(out, "at most 1 poll(s) at once") {
		t.Error("polls overlapped, or the count is missing")
	}
}

// scenarioCheckCacheWarmer: each partition warmed once, by more than one
// replica in all.
func scenarioCheckCacheWarmer(t *testing.T, out string) {
	warms := regexp.MustCompile(`(\w+) warms partition (\d+)`).FindAllStringSubmatch(out, -1)
	partitions, replicas := map[string]int{}, map[string]bool{}
	for _, w := range warms {
		replicas[w[1]] = true
		partitions[w[2]]++
	}
	if len(warms) != cacheWarmPartitions || len(partitions) != cacheWarmPartitions {
		t.Errorf("%d warms of %d partitions, want %d of %d", len(warms), len(partitions), cacheWarmPartitions, cacheWarmPartitions)
	}
	if len(replicas) < 2 {
		t.Errorf("only %v warmed partitions", replicas)
	}
}

// scenarioCheckTenants: before and after a replica leaves, the leads add
// up to every tenant, spread over more than one replica, and the one that
// left leads none.
func scenarioCheckTenants(t *testing.T, out string) {
	settled := regexp.MustCompile(`led by exactly one replica .*: \[(.*)\]`).FindAllStringSubmatch(out, -1)
	if len(settled) != 2 {
		t.Fatalf("%d settled lines, want 2", len(settled))
	}
	for i, s := range settled {
		sum, leading := 0, 0
		for _, share := range regexp.MustCompile(`(\w+) (\d+)`).FindAllStringSubmatch(s[1], -1) {
			n, err := strconv.Atoi(share[2])
			if err != nil {
				t.Fatal(err)
			}
			sum += n
			if n > 0 {
				leading++
			}
			if i == 1 && share[1] == "delta" && n != 0 {
				t.Errorf("delta left but leads %d tenants", n)
			}
		}
		if sum != tenantsCount || leading < 2 {
			t.Errorf("%q: %d tenants led by %d replicas, want %d by more than one", s[1], sum, leading, tenantsCount)
		}
	}
}

// scenarioCheckOperator: the old leader's write, with a lower token than
// the new leader's, was refused.
func scenarioCheckOperator(t *testing.T, out string) {
	m := regexp.MustCompile(`leads and writes the spec with token (\d+)(?s:.*)it writes replicas=3 with token (\d+), its term long revoked; the store refuses it: backends: not held`).FindStringSubmatch(out)
	if m == nil {
		t.Fatal("no stale write refused by the store's fence")
	}
	cur, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	old, err := strconv.ParseUint(m[2], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	if old >= cur {
		t.Errorf("refused token %d after %d, want a lower one", old, cur)
	}
	if !strings.Contains(out, "the store holds replicas=5") || !strings.Contains(out, "1 stale write(s) refused") {
		t.Error("want the new leader's spec kept and exactly one refused write")
	}
	if !strings.Contains(out, "backend unreachable at the deadline") {
		t.Error("the frozen leader's term was not revoked at its deadline")
	}
}

// TestOperatorOnServers runs the operator scenario on each real server's
// backend: its resource is a key in that store, written under that
// backend's native fence, which must refuse the frozen leader's write.
func TestOperatorOnServers(t *testing.T) {
	for _, tc := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"etcd", func(t *testing.T) string { return "etcd://" + etcdtest.Start(t).Addr() }},
		{"postgres", func(t *testing.T) string { return pgtest.Start(t).DSN() }},
		{"redis", func(t *testing.T) string { return "redis://" + redistest.Start(t).Addr() }},
		{"zookeeper", func(t *testing.T) string { return "zk://" + zktest.Start(t).Addr() }},
		{"nats", func(t *testing.T) string { return natstest.Start(t).URL() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := runScenario(t.Context(), []string{"operator", "--backend", tc.url(t)}, &out, &out); err != nil {
				t.Fatalf("scenario operator on %s: %v\n%s", tc.name, err, out.String())
			}
			scenarioCheckOperator(t, out.String())
			if t.Failed() {
				t.Logf("output:\n%s", out.String())
			}
		})
	}
}
