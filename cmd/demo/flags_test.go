package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestRefusals: flags that cannot work are refused before anything
// starts, each with one line that names the flag and what would work.
func TestRefusals(t *testing.T) {
	node := []string{"node", "--backend", "redis://127.0.0.1:6379", "--name", "n", "--id", "a"}
	with := func(args ...string) []string { return append(append([]string(nil), node...), args...) }
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"show", "extra"}, `demo show takes flags only, not "extra"`},
		{[]string{"--backend", "memory", "extra"}, `demo show takes flags only, not "extra"`},
		{[]string{"show", "--backend", "MEMORY://x"}, "the memory backend takes no host"},
		{[]string{"show", "--backend", ""}, "empty: write memory"},
		{[]string{"show", "--dial-timeout", "0s"}, "--dial-timeout 0s must be more than 0"},
		{[]string{"show", "--http", "127.0.0.1:99999"}, "--http 127.0.0.1:99999: listen tcp"},
		{[]string{"show", "--ttl", "1s"}, "flag provided but not defined: -ttl"},
		{[]string{"scenario", "batch", "extra"}, `demo scenario batch takes flags only, not "extra"`},
		{[]string{"node", "--name", "n", "--id", "a"}, "demo node needs a server that every node shares, such as --backend redis://"},
		{[]string{"node", "--backend", "memory", "--name", "n", "--id", "a"}, "the memory backend lives inside one process"},
		{[]string{"node", "--backend", "redis://127.0.0.1:6379"}, "demo node needs --name and --id"},
		{with("extra"), `demo node takes flags only, not "extra"`},
		{with("--ttl", "1ms"), "TTL 1ms is too short to hold a lock (a campaign renews every third of it): the shortest that works is 100ms"},
		{with("--ttl", "99ms"), "the shortest that works is 100ms"},
		{with("--ttl", "200h"), "TTL 200h must be from 1ms to 7 days"},
		{with("--ttl", "abc"), `invalid value "abc" for flag -ttl`},
		{[]string{"node", "--backend", "zk://127.0.0.1:2181", "--name", "n", "--id", "a", "--ttl", "10s"}, "--ttl 10s is longer than the ZooKeeper session timeout, 4s"},
		{with("--work", "-1s"), "--work -1s is negative"},
		{with("--slots", "0"), "--slots 0 must be at least 1"},
		{with("--strategy", "score"), "--strategy ranks the candidates of a group: it needs --slots 2 or more"},
		{with("--slots", "3", "--strategy", "best"), `--strategy "best" is not one of fifo, random, score, weighted`},
		{with("--slots", "3", "--strategy", "score", "--weight", "2"), `--weight is for --strategy weighted, not "score"`},
		{with("--slots", "3", "--strategy", "weighted", "--score", "2", "--weight", "1"), `--score is for --strategy score, not "weighted"`},
		{with("--slots", "3", "--weight", "2"), "--weight is for --strategy weighted, not none"},
		{with("--slots", "3", "--strategy", "weighted"), "--strategy weighted needs a --weight more than 0"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var out bytes.Buffer
			err := run(t.Context(), tt.args, &out, &out)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("run(%q) = %v, want an error with %q", tt.args, err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") || out.Len() > 0 {
				t.Fatalf("run(%q): error %q and output %q, want one line and no output", tt.args, err, out.String())
			}
		})
	}
}

// TestRefusalExits: a refusal exits non-zero with one line on stderr.
func TestRefusalExits(t *testing.T) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(os.Args[0], "--", "node", "--backend", "redis://127.0.0.1:6379", "--name", "n", "--id", "a", "--ttl", "1ms")
	cmd.Env = append(os.Environ(), "HUSTINGS_DEMO_AS_MAIN=1")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() == 0 {
		t.Fatalf("demo node --ttl 1ms: %v, want a non-zero exit", err)
	}
	if got := stderr.String(); strings.Count(got, "\n") != 1 || !strings.HasPrefix(got, "demo: campaign: invalid: TTL 1ms is too short") || stdout.Len() > 0 {
		t.Fatalf("stderr %q, stdout %q; want one line on stderr", got, stdout.String())
	}
}

// TestFlagHelp: --help of a command lists its flags on stdout and is no
// error for main.
func TestFlagHelp(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), []string{"node", "--help"}, &out, &out)
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "-dial-timeout") || !strings.Contains(out.String(), "-ttl") {
		t.Fatalf("node --help: %v\n%s", err, out.String())
	}
}
