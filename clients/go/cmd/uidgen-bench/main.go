// Command uidgen-bench measures the Go client beside one HTTP request per ID, on a live
// uidgen service, in one run:
//
//	uidgen-bench HOST:PORT [-tag order] [-client-ids N] [-http-ids N] [-goroutines N]
//
// It prints a markdown table: IDs/s (a loop without timers, after a warm-up) and the
// p50/p99 of one call (a second loop timing each call), for (a) Client.NextID on one
// goroutine, (b) one kept-alive net/http GET /v1/segment/TAG (Accept: text/plain) per
// ID, and (c) the same client shared by N goroutines (IDs/s in total). The ratio column
// is each row's IDs/s over (b)'s.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	uidgen "github.com/uidgen/uidgen/clients/go"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "uidgen-bench:", err)
		os.Exit(1)
	}
}

// throughput is IDs per second over n calls, with nothing but the calls in the loop.
func throughput(take func() (uint64, error), n int) (float64, error) {
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err := take(); err != nil {
			return 0, err
		}
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// latencies is the p50 and p99 of one call over n calls, each timed alone.
func latencies(take func() (uint64, error), n int) (p50, p99 time.Duration, err error) {
	samples := make([]time.Duration, n)
	for i := range samples {
		asked := time.Now()
		if _, err := take(); err != nil {
			return 0, 0, err
		}
		samples[i] = time.Since(asked)
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	// Nearest rank: the smallest sample with at least p of them at or below it.
	rank := func(p float64) time.Duration {
		k := int(p*float64(n)+0.999999) - 1
		if k < 0 {
			k = 0
		}
		return samples[k]
	}
	return rank(0.50), rank(0.99), nil
}

// shared is IDs per second in total, g goroutines taking per IDs each, started together.
func shared(take func() (uint64, error), g, per int) (float64, error) {
	var ready, done sync.WaitGroup
	start := make(chan struct{})
	errs := make(chan error, g)
	ready.Add(g)
	done.Add(g)
	for i := 0; i < g; i++ {
		go func() {
			defer done.Done()
			ready.Done()
			<-start
			for k := 0; k < per; k++ {
				if _, err := take(); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	ready.Wait()
	began := time.Now()
	close(start)
	done.Wait()
	elapsed := time.Since(began)
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return float64(g*per) / elapsed.Seconds(), nil
}

func run(args []string) error {
	flags := flag.NewFlagSet("uidgen-bench", flag.ContinueOnError)
	tag := flags.String("tag", "order", "a segment tag the service serves")
	clientIDs := flags.Int("client-ids", 2_000_000, "IDs per client loop")
	httpIDs := flags.Int("http-ids", 3_000, "IDs per one-request-per-ID loop")
	goroutines := flags.Int("goroutines", 4, "goroutines sharing the client in (c)")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() != 1 || *clientIDs < 1 || *httpIDs < 1 || *goroutines < 1 {
		return fmt.Errorf("usage: uidgen-bench HOST:PORT [-tag order] [-client-ids N] [-http-ids N] [-goroutines N], counts at least 1")
	}
	server := flags.Arg(0)
	ctx := context.Background()

	client, err := uidgen.New([]string{server})
	if err != nil {
		return err
	}
	takeClient := func() (uint64, error) { return client.NextID(ctx, *tag) }
	if _, err := throughput(takeClient, *clientIDs/10); err != nil { // warm-up: first ranges, growth
		return err
	}
	cRate, err := throughput(takeClient, *clientIDs)
	if err != nil {
		return err
	}
	cP50, cP99, err := latencies(takeClient, *clientIDs/4)
	if err != nil {
		return err
	}
	if _, err := shared(takeClient, *goroutines, 10_000); err != nil { // warm-up
		return err
	}
	sRate, err := shared(takeClient, *goroutines, *clientIDs / *goroutines)
	if err != nil {
		return err
	}
	if err := client.Close(ctx); err != nil {
		return err
	}

	httpClient := &http.Client{Timeout: 5 * time.Second}
	url := "http://" + server + "/v1/segment/" + *tag
	takeHTTP := func() (uint64, error) {
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Accept", "text/plain")
		resp, err := httpClient.Do(req)
		if err != nil {
			return 0, err
		}
		// Read to the end, so the connection is kept for the next request.
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, err
		}
		if resp.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, body)
		}
		return strconv.ParseUint(strings.TrimSpace(string(body)), 10, 64)
	}
	if _, err := throughput(takeHTTP, 300); err != nil { // warm-up: the connection, the server
		return err
	}
	hRate, err := throughput(takeHTTP, *httpIDs)
	if err != nil {
		return err
	}
	hP50, hP99, err := latencies(takeHTTP, *httpIDs)
	if err != nil {
		return err
	}

	us := func(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d.Nanoseconds())/1000) }
	fmt.Printf("%s, GOMAXPROCS %d, server %s, tag %s; client loops %d IDs, per-request loops %d IDs\n\n",
		runtime.Version(), runtime.GOMAXPROCS(0), server, *tag, *clientIDs, *httpIDs)
	fmt.Println("| case | IDs/s | p50 µs | p99 µs | IDs/s ratio vs (b) |")
	fmt.Println("|---|---:|---:|---:|---|")
	fmt.Printf("| (a) `client.NextID` | %.0f | %s | %s | ×%.0f |\n", cRate, us(cP50), us(cP99), cRate/hRate)
	fmt.Printf("| (b) one HTTP request per ID (net/http, keep-alive) | %.0f | %s | %s | ×1 |\n", hRate, us(hP50), us(hP99))
	fmt.Printf("| (c) `client.NextID`, %d goroutines (total) | %.0f | — | — | ×%.0f |\n", *goroutines, sRate, sRate/hRate)
	return nil
}
