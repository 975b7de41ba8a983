// Command bench measures Hustings against the raw backends (memory, Redis,
// etcd, ZooKeeper) and against the peer lock libraries on each, side by
// side in one run, and writes tables (results/latest.md), raw numbers
// (results/latest.json) and charts (results/*.png).
//
// It starts its own servers on loopback (redis-server and ZooKeeper
// processes, etcd embedded), with the helpers the backend tests use, and
// stops them when it ends, on error or interrupt too. Run it from bench/:
//
//	go run .          # the full run: over an hour for every backend
//	go run . -quick   # a smoke run: about 12 minutes for every backend
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// run parses args, runs the workloads and writes the results; progress
// goes to out.
func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	quick := fs.Bool("quick", false, "a short smoke run (about 12 minutes for every backend) instead of the full one")
	dir := fs.String("out", "results", "directory for latest.md, latest.json and the charts")
	only := fs.String("backends", "memory,redis,etcd,zookeeper,postgres,mysql,kubernetes,nats,consul,mongodb,dynamodb", "comma-separated backends to run")
	rev := fs.String("rev", gitRev(), "the library revision measured, for the report")
	workloads := fs.String("workloads", "", "comma-separated workloads to run (default: all): "+strings.Join(workloadIDs(), ","))
	scale := fs.String("scale", "", "comma-separated numbers of campaigns for the scale workload, on every backend (default: 1,100,1000,10000,100000, ZooKeeper, MongoDB, DynamoDB and Consul up to 10000, Kubernetes up to 1000; -quick: 1,100,1000)")
	render := fs.String("render", "", "render the tables and charts again from this latest.json, without running anything")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *render != "" {
		return rerender(*render, *dir)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg := fullConfig()
	if *quick {
		cfg = quickConfig()
	}
	if *scale != "" {
		var err error
		if cfg.Scale, err = parseCounts(*scale); err != nil {
			return fmt.Errorf("-scale: %w", err)
		}
		cfg.ScaleMax = nil // what is asked for, on every backend
	}
	b := &bench{cfg: cfg, out: out, report: newReport(cfg, args)}
	b.report.Revision = *rev
	fs.Visit(func(f *flag.Flag) {
		b.report.Partial = b.report.Partial || f.Name == "backends" || f.Name == "workloads" || f.Name == "scale"
	})
	if err := b.start(ctx, splitList(*only)); err != nil {
		return err
	}
	defer b.stop()
	err := b.runAll(ctx, splitList(*workloads))
	b.report.Elapsed = time.Since(b.report.Started).Round(time.Second)
	b.report.Targets = evaluate(b.report)
	if werr := b.report.WriteFiles(*dir); werr != nil {
		return errors.Join(err, werr)
	}
	if cerr := writeCharts(b.report, *dir); cerr != nil {
		return errors.Join(err, cerr)
	}
	b.logf("wrote %s/latest.md, latest.json and charts in %v", *dir, b.report.Elapsed)
	return err
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// parseCounts parses a comma-separated list of positive counts.
func parseCounts(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// gitRev returns the short commit of the repository around the working
// directory, with "+dirty" when files differ from it; "" outside git.
func gitRev() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return ""
	}
	rev := strings.TrimSpace(string(out))
	if err := exec.Command("git", "diff", "--quiet", "HEAD", "--", "..").Run(); err != nil {
		rev += "+dirty"
	}
	return rev
}

// rerender writes latest.md and the charts into dir from the raw numbers
// of a latest.json, judging the targets again.
func rerender(path, dir string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var rep Report
	if err := json.Unmarshal(data, &rep); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	rep.Targets = evaluate(&rep)
	if err := rep.WriteFiles(dir); err != nil {
		return err
	}
	return writeCharts(&rep, dir)
}
