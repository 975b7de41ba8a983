package dynamodial_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/hustings/hustings/backends/dial"
	"github.com/hustings/hustings/backends/dial/dialtest"
	_ "github.com/hustings/hustings/backends/dynamodb/dynamodial"
	"github.com/hustings/hustings/backends/dynamodb/dynamotest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBadDynamoDBURLs(t *testing.T) {
	dialtest.CheckBad(t, map[string]string{
		"dynamodb:opaque":          `no // after "dynamodb:"`,
		"dynamodb://h:1,h:2":       "one host:port only",
		"dynamodb://h:1/a b":       "table",
		"dynamodb://h:1/ab":        "table",
		"dynamodb://h:1?bogus=1":   "unknown parameter",
		"dynamodb://h:1?tls=maybe": "want true or false",
		"dynamodb://key@h:1":       "an access key ID and no password",
		"dynamodb://h:1#x":         "fragments are not supported",
		"dynamodb://h:99999":       `port "99999"`,
	})
}

func TestParseDynamoDB(t *testing.T) {
	dialtest.CheckParse(t, map[string]dial.Target{
		"dynamodb://h:8000":                        {Scheme: "dynamodb", Hosts: []string{"h:8000"}, DSN: "http://h:8000"},
		"dynamodb://h:8000/locks?region=eu-west-1": {Scheme: "dynamodb", Hosts: []string{"h:8000"}, Bucket: "locks", DSN: "http://h:8000"},
		"DynamoDB://k:s@dynamodb.eu-west-1.amazonaws.com:443/t_1": {Scheme: "dynamodb",
			Hosts: []string{"dynamodb.eu-west-1.amazonaws.com:443"}, Bucket: "t_1", DSN: "https://dynamodb.eu-west-1.amazonaws.com:443"},
		"dynamodb://h:1?tls=true": {Scheme: "dynamodb", Hosts: []string{"h:1"}, DSN: "https://h:1"},
	})
}

// TestOpenDynamoDB elects a leader through a dynamodb:// URL on a real
// dynalite, twice (Migrate is idempotent), with and without a table and
// credentials in the URL.
func TestOpenDynamoDB(t *testing.T) {
	s := dynamotest.Start(t)
	for _, u := range []string{
		"dynamodb://" + s.Addr(),
		"dynamodb://" + s.Addr() + "/elect_table?region=eu-west-1",
		"dynamodb://k:s@" + s.Addr() + "/elect_table",
	} {
		t.Run(u, func(t *testing.T) { dialtest.Elect(t, u) })
	}
}
