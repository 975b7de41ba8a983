package strategy_test

import (
	"fmt"

	"github.com/hustings/hustings/strategy"
)

var nodes = []strategy.Candidate{
	{ID: "node-a", Order: 1, Score: 0.2, Weight: 1},
	{ID: "node-b", Order: 2, Score: 0.9, Weight: 3},
	{ID: "node-c", Order: 3, Score: 0.5, Weight: 1},
}

func ExampleFIFO() {
	ranked, err := strategy.FIFO().Rank("rollups", 0, nodes)
	if err != nil {
		panic(err)
	}
	fmt.Println(ranked[0].ID, ranked[1].ID, ranked[2].ID)
	// Output: node-a node-b node-c
}

func ExampleScore() {
	ranked, err := strategy.Score().Rank("rollups", 0, nodes)
	if err != nil {
		panic(err)
	}
	fmt.Println(ranked[0].ID, ranked[1].ID, ranked[2].ID)
	// Output: node-b node-c node-a
}

// Every node that ranks the same list for the same group and epoch gets the
// same order; the next epoch draws again.
func ExampleRandom() {
	a, err := strategy.Random().Rank("rollups", 41, nodes)
	if err != nil {
		panic(err)
	}
	b, err := strategy.Random().Rank("rollups", 41, nodes)
	if err != nil {
		panic(err)
	}
	fmt.Println(a[0].ID == b[0].ID)
	// Output: true
}

// Over many epochs node-b ranks first about 3 times in 5.
func ExampleWeighted() {
	first := map[string]int{}
	for epoch := range uint64(10000) {
		ranked, err := strategy.Weighted().Rank("rollups", epoch, nodes)
		if err != nil {
			panic(err)
		}
		first[ranked[0].ID]++
	}
	fmt.Printf("node-b first in %.1f of epochs\n", float64(first["node-b"])/10000)
	// Output: node-b first in 0.6 of epochs
}
