package main

import (
	"context"
	"flag"
	"fmt"
	"io"
)

// scenario is one real-world use of leader election, told in its own file
// (scenario_NAME.go) as a short tutorial.
type scenario struct {
	name, summary string
	run           func(ctx context.Context, env *scenarioEnv) error
}

// scenarioEnv is what a scenario runs with.
type scenarioEnv struct {
	backend backendFlags // the scenario opens it, or its own connections to it
	out     io.Writer    // the scenario's narration
	tl      *timeline
}

// scenarios lists every scenario, in the order the help shows them.
var scenarios = []scenario{
	{"batch", "a nightly job on five replicas under campaign.Every runs exactly once per period", batchScenario},
	{"migration", "five replicas start at once; one migrates under RunIfLeader, the others wait for its marker", migrationScenario},
	{"poller", "a webhook poller only the leader runs (WhileLeader); it hands over without overlapping polls", pollerScenario},
	{"cache-warmer", "a lock per partition: replicas warm partitions in parallel, each exactly once", cacheWarmScenario},
	{"tenants", "a campaign per tenant, 200 tenants over 4 replicas on shared sessions, each led by exactly one", tenantsScenario},
	{"operator", "a reconcile loop passes its fencing token; the resource refuses a paused old leader's write", operatorScenario},
}

func scenarioNames() []string {
	var names []string
	for _, s := range scenarios {
		names = append(names, s.name)
	}
	return names
}

// runScenario runs "demo scenario NAME [--backend URL] [--dial-timeout D]".
func runScenario(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stdout, "usage: demo scenario NAME [--backend URL] [--dial-timeout D]\n\nscenarios:")
		for _, s := range scenarios {
			fmt.Fprintf(stdout, "  %-13s %s\n", s.name, s.summary)
		}
		if len(args) == 0 {
			return fmt.Errorf("name a scenario")
		}
		return nil
	}
	for _, s := range scenarios {
		if s.name != args[0] {
			continue
		}
		env := &scenarioEnv{out: stdout}
		fs := flag.NewFlagSet("demo scenario "+s.name, flag.ContinueOnError)
		env.backend.register(fs, "memory")
		if err := parseFlags(fs, args[1:], stdout); err != nil {
			return err
		}
		target, err := env.backend.check()
		if err != nil {
			return err
		}
		env.tl = newTimeline(stdout, target)
		defer env.tl.flush()
		return s.run(ctx, env)
	}
	return fmt.Errorf("unknown scenario %q (want one of %v)", args[0], scenarioNames())
}
