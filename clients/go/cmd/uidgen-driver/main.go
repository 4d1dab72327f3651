// Command uidgen-driver is the driver every uidgen client has, for the fleet test
// (clients/PROTOCOL.md):
//
//	uidgen-driver SERVERS TAG THREADS IDS_PER_THREAD OUT
//
// One client, THREADS goroutines started together, each taking IDS_PER_THREAD IDs of
// TAG and then 1,000 snowflake IDs. Goroutine t writes its segment IDs to OUT.t and its
// snowflake IDs to OUT.t.snowflake, one decimal a line in the order taken. Then the
// client is closed and one JSON line goes to stdout. The token, if any, is read from
// UIDGEN_TOKEN. Exit 0, or the error on stderr and exit 1.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	uidgen "github.com/uidgen/uidgen/clients/go"
)

const (
	usage                  = "usage: uidgen-driver SERVERS TAG THREADS IDS_PER_THREAD OUT"
	snowflakesPerGoroutine = 1000
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv("UIDGEN_TOKEN"), os.Stdout, os.Stderr))
}

type summary struct {
	IDs       uint64 `json:"ids"`
	Failovers uint64 `json:"failovers"`
	MaxCallMs int64  `json:"max_call_ms"`
}

func run(args []string, token string, stdout, stderr io.Writer) int {
	fail := func(err error) int {
		fmt.Fprintln(stderr, "uidgen-driver:", err)
		return 1
	}
	if len(args) != 5 {
		return fail(fmt.Errorf(usage))
	}
	servers, tag, out := strings.Split(args[0], ","), args[1], args[4]
	threads, err := strconv.Atoi(args[2])
	if err != nil || threads < 0 {
		return fail(fmt.Errorf("THREADS %q is not a count", args[2]))
	}
	perThread, err := strconv.Atoi(args[3])
	if err != nil || perThread < 0 {
		return fail(fmt.Errorf("IDS_PER_THREAD %q is not a count", args[3]))
	}
	var opts []uidgen.Option
	if token != "" {
		opts = append(opts, uidgen.WithToken(token))
	}
	client, err := uidgen.New(servers, opts...)
	if err != nil {
		return fail(err)
	}

	// The first failure stops the others, so a broken run ends soon.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
		longest  time.Duration
	)
	failed := func(err error) {
		mu.Lock()
		if firstErr == nil {
			firstErr = err
		}
		mu.Unlock()
		cancel()
	}
	start := make(chan struct{})
	var wg sync.WaitGroup
	for t := 0; t < threads; t++ {
		wg.Add(1)
		go func(t int) {
			defer wg.Done()
			<-start // all together, so they contend as the fleet test means them to
			var mine time.Duration
			// timed is one take, measured: max_call_ms is the longest any take waited.
			timed := func(takeOne func() (uint64, error)) (uint64, error) {
				began := time.Now()
				id, err := takeOne()
				if d := time.Since(began); d > mine {
					mine = d
				}
				return id, err
			}
			ids := make([]uint64, 0, perThread)
			for len(ids) < perThread {
				id, err := timed(func() (uint64, error) { return client.NextID(ctx, tag) })
				if err != nil {
					failed(err)
					return
				}
				ids = append(ids, id)
			}
			flakes := make([]uint64, 0, snowflakesPerGoroutine)
			for len(flakes) < snowflakesPerGoroutine {
				id, err := timed(func() (uint64, error) { return client.Snowflake(ctx) })
				if err != nil {
					failed(err)
					return
				}
				flakes = append(flakes, id)
			}
			mu.Lock()
			if mine > longest {
				longest = mine
			}
			mu.Unlock()
			if err := write(fmt.Sprintf("%s.%d", out, t), ids); err != nil {
				failed(err)
				return
			}
			if err := write(fmt.Sprintf("%s.%d.snowflake", out, t), flakes); err != nil {
				failed(err)
			}
		}(t)
	}
	close(start)
	wg.Wait()
	if err := client.Close(context.Background()); err != nil {
		// Only gaps: reported, not a failure of the run.
		fmt.Fprintln(stderr, "uidgen-driver: not given back:", err)
	}
	if firstErr != nil {
		return fail(firstErr)
	}
	line, _ := json.Marshal(summary{
		IDs:       uint64(threads) * uint64(perThread),
		Failovers: client.Failovers(),
		// Rounded up, so the bound the fleet test checks is never understated.
		MaxCallMs: int64((longest + time.Millisecond - 1) / time.Millisecond),
	})
	fmt.Fprintln(stdout, string(line))
	return 0
}

func write(path string, ids []uint64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	buf := make([]byte, 0, 24)
	for _, id := range ids {
		buf = strconv.AppendUint(buf[:0], id, 10)
		buf = append(buf, '\n')
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
