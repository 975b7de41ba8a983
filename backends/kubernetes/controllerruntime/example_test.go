package crleader_test

import (
	"context"
	"log"
	"os"
	"os/signal"
	"time"

	goredis "github.com/redis/go-redis/v9"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	crleader "github.com/hustings/hustings/backends/kubernetes/controllerruntime"
	"github.com/hustings/hustings/backends/redis"
	"github.com/hustings/hustings/campaign"
)

// A manager whose leader is elected on Redis rather than on a Lease, and
// a leader runnable that fences its writes with its term's token.
func Example() {
	rdb := goredis.NewClient(&goredis.Options{Addr: "redis:6379", ContextTimeoutEnabled: true})
	defer rdb.Close()
	b, err := redis.New(rdb)
	if err != nil {
		log.Fatal(err)
	}
	lock, err := crleader.NewLock(b, "my-operator", 15*time.Second, campaign.WithID(os.Getenv("POD_NAME")))
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Close() // after Start returned: releases the lock if client-go did not

	cfg, err := ctrlconfig.GetConfig()
	if err != nil {
		log.Fatal(err)
	}
	mgr, err := manager.New(cfg, lock.Options(manager.Options{}))
	if err != nil {
		log.Fatal(err)
	}
	work, err := lock.WhileLeader(func(ctx context.Context) error {
		term, _ := crleader.Term(ctx)
		log.Printf("leading under token %d until %v", term.Token, term.Deadline)
		<-ctx.Done() // ends when the manager stops, or at once when the term ends
		return nil
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := mgr.Add(work); err != nil {
		log.Fatal(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := mgr.Start(ctx); err != nil {
		log.Print(err) // "leader election lost": exit, as with client-go's locks
	}
}
