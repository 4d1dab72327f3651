package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeService hands out consecutive ranges and snowflake IDs, and checks the token.
func fakeService(t *testing.T, token string) (*httptest.Server, *[]string) {
	var mu sync.Mutex
	next, flake := uint64(1), uint64(1<<60)
	var givebacks []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(401)
			fmt.Fprint(w, `{"error":"no token, or an unknown one","status":401}`)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		count, _ := strconv.ParseUint(r.URL.Query().Get("count"), 10, 64)
		switch {
		case strings.HasSuffix(r.URL.Path, "/range"):
			fmt.Fprintf(w, `{"tag":"order","count":%d,"first":%d,"last":%d,"first_str":"%d","last_str":"%d","receipt":"r%d"}`,
				count, next, next+count-1, next, next+count-1, next)
			next += count
		case strings.HasSuffix(r.URL.Path, "/giveback"):
			givebacks = append(givebacks, r.URL.RawQuery)
			fmt.Fprint(w, `{"tag":"order","given_back":true}`)
		case r.URL.Path == "/v1/snowflake":
			ids := make([]string, count)
			for i := range ids {
				ids[i] = strconv.FormatUint(flake, 10)
				flake++
			}
			fmt.Fprintf(w, `{"count":%d,"ids":[%s],"ids_str":["%s"]}`, count, strings.Join(ids, ","), strings.Join(ids, `","`))
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &givebacks
}

func readIDs(t *testing.T, path string) []uint64 {
	t.Helper()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for _, line := range strings.Split(strings.TrimSuffix(string(text), "\n"), "\n") {
		id, err := strconv.ParseUint(line, 10, 64)
		if err != nil {
			t.Fatalf("%s: %q is not an ID", path, line)
		}
		ids = append(ids, id)
	}
	return ids
}

func TestTheDriverWritesWhatPROTOCOLSays(t *testing.T) {
	const token = "k3y-for-orders-0123456789"
	srv, givebacks := fakeService(t, token)
	out := filepath.Join(t.TempDir(), "out")
	var stdout, stderr bytes.Buffer
	// A dead server first in the list: a failover may be counted, nothing may fail.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	servers := dead + "," + strings.TrimPrefix(srv.URL, "http://")
	code := run([]string{servers, "order", "4", "2500", out}, token, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var s summary
	if err := json.Unmarshal(stdout.Bytes(), &s); err != nil || s.IDs != 10000 || s.MaxCallMs < 0 {
		t.Fatalf("summary %q: %v", stdout.String(), err)
	}
	if !strings.HasSuffix(stdout.String(), "}\n") || strings.Count(stdout.String(), "\n") != 1 {
		t.Fatalf("stdout is not one JSON line: %q", stdout.String())
	}
	seen := map[uint64]bool{}
	for th := 0; th < 4; th++ {
		for _, suffix := range []string{"", ".snowflake"} {
			ids := readIDs(t, fmt.Sprintf("%s.%d%s", out, th, suffix))
			want := 2500
			if suffix != "" {
				want = 1000
			}
			if len(ids) != want {
				t.Fatalf("thread %d%s: %d IDs, want %d", th, suffix, len(ids), want)
			}
			for i, id := range ids {
				if i > 0 && id <= ids[i-1] {
					t.Fatalf("thread %d%s: %d after %d", th, suffix, id, ids[i-1])
				}
				if seen[id] {
					t.Fatalf("ID %d twice", id)
				}
				seen[id] = true
			}
		}
	}
	if len(*givebacks) == 0 {
		t.Fatal("closing gave nothing back")
	}
}

func TestTheDriverFailsWithTheErrorAndExit1(t *testing.T) {
	srv, _ := fakeService(t, "k3y-for-orders-0123456789")
	var stdout, stderr bytes.Buffer
	code := run([]string{srv.URL, "order", "2", "10", filepath.Join(t.TempDir(), "out")}, "wrong-token-0123456789", &stdout, &stderr)
	if code != 1 || stdout.Len() != 0 || !strings.Contains(stderr.String(), "no token, or an unknown one") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
	stderr.Reset()
	if code := run([]string{"a:1", "order"}, "", &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), "usage") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}
