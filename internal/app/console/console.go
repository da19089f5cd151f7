package console

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/millfleet/mill/internal/app/console/auth"
	"github.com/millfleet/mill/internal/base/defaults"
	"github.com/millfleet/mill/internal/base/validate"
	"github.com/millfleet/mill/internal/ops/queuestats"
	"github.com/millfleet/mill/pkg/auditlog"
	"github.com/millfleet/mill/pkg/bitlog"
	"github.com/millfleet/mill/pkg/changelog"
	"github.com/millfleet/mill/pkg/clock"
	"github.com/millfleet/mill/pkg/configstore"
	"github.com/millfleet/mill/pkg/contentindex"
	"github.com/millfleet/mill/pkg/deadletter"
	"github.com/millfleet/mill/pkg/fleet"
	"github.com/millfleet/mill/pkg/policy"
	"github.com/millfleet/mill/pkg/policyedit"
	"github.com/millfleet/mill/pkg/queue"
	"github.com/millfleet/mill/pkg/runs"
	"github.com/millfleet/mill/pkg/spacestats"
	"github.com/millfleet/mill/pkg/storage"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets/htmx.min.js assets/htmx.LICENSE.txt assets/console.css
var assetFS embed.FS

// Defaults of Config.
const (
	DefaultRefresh       = 5 * time.Second
	DefaultSampleEvery   = 30 * time.Second
	DefaultHistoryWindow = time.Hour
	// DefaultPolicyRefresh is the policy cache's own default, the one
	// Workman and the producers use unless told otherwise.
	DefaultPolicyRefresh = policy.DefaultRefresh
	// DefaultDeadLetterRescan: see Config.DeadLetterRescan.
	DefaultDeadLetterRescan = time.Minute
	// DefaultDeadLetterMax: see Config.DeadLetterMax.
	DefaultDeadLetterMax = 20_000
	// DefaultDeadLetterHold is how long the console's scan holds the dead
	// letters it has seen (deadletter.Config.Hold). Longer than the
	// library's default: the scan covers up to DeadLetterMax letters, and
	// keeping them held costs one request per ten letters every half hold.
	DefaultDeadLetterHold = 2 * time.Minute
	// DefaultScanBudget is how many bit-log rows one page may read to
	// answer a filter the bit log cannot apply itself (a case, repairs).
	DefaultScanBudget = 50_000
)

// CSP is the Content-Security-Policy of every response: nothing from
// elsewhere, no inline script or style, no framing, forms post only here.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// Config configures a console.
type Config struct {
	// Auth identifies users (required).
	Auth auth.Authenticator `validate:"required"`
	// AllowedHosts are the host names the console answers to: "host" or
	// "host:port" as browsers send them in Host and Origin (see
	// ParseAllowedHosts). A request naming another host gets 421, and a
	// state-changing request's Origin (or Referer) must name one of them.
	// Empty: under the "none" mode, the loopback names localhost,
	// 127.0.0.1 and [::1] (and the loopback address served on) with the
	// port the request arrived on; in the
	// other modes any Host, with the Origin checked against the request's
	// Host (credentials, not the network, authenticate there). Under the
	// "none" mode only loopback names are accepted.
	AllowedHosts []string
	// Files are the configuration files: accounts.json,
	// duplication-accounts.json, the policies (required).
	Files configstore.Store `validate:"required"`
	// Changes records every change (required).
	Changes changelog.Log `validate:"required"`
	// Queues reads the seven queues (required).
	Queues *queuestats.Reader `validate:"required"`
	// BitLog is the bit log; nil when no database is configured (the bit
	// pages say so).
	BitLog bitlog.Log
	// Reports opens bit-integrity report files for download; nil: none.
	Reports ReportOpener
	// DeadLetters reads, redrives and purges the dead-letter queue; nil:
	// the dead-letter page says it is not configured.
	DeadLetters *deadletter.Inspector
	// DeadLetterRescan is how old the dead-letter index may be before a
	// page view scans the queue again (default DefaultDeadLetterRescan);
	// DeadLetterMax bounds it (default DefaultDeadLetterMax).
	DeadLetterRescan time.Duration
	DeadLetterMax    int
	// Fleet is the fleet registry; nil: the fleet page says it is not
	// configured.
	Fleet fleet.Registry
	// Index is the content index (the item pages, the home page's fixity
	// coverage; a contentindex.Searcher for the item search); Stats the
	// storage statistics (the statistics page, the spaces the coverage
	// covers); Audit the audit log (an item's history). nil: the pages
	// say what they lack.
	Index contentindex.Index
	Stats spacestats.Store
	Audit auditlog.Log
	// Stores opens the registered stores, for an item's storage class,
	// versions and trash; nil: not shown. AuditQueue is the audit queue a
	// restore is audited on (as by millctl content restore); nil: no
	// restore.
	Stores     storage.Opener
	AuditQueue queue.Queue
	// Runs is the record of producer runs (pkg/runs): the home page shows
	// those in progress, each with its page (/runs/PRODUCER/ID); nil: the
	// home page says it reads none.
	Runs runs.Store
	// Evidence is the evidence log whose events (and their inclusion
	// proofs) an item's page shows; nil: none.
	Evidence *EvidenceLog
	// Alarms lists Mill's alarms in ALARM (CloudWatchAlarms); nil: the
	// home page shows none.
	Alarms AlarmLister
	// Refresh is how often live pages refresh (default DefaultRefresh).
	Refresh time.Duration
	// SampleEvery is how often the queues are sampled for the depth
	// charts (default DefaultSampleEvery), which show the last
	// HistoryWindow (default DefaultHistoryWindow).
	SampleEvery   time.Duration
	HistoryWindow time.Duration
	// PolicyRefresh is how long Workman and the producers cache policies
	// (told to the user after a save; default DefaultPolicyRefresh).
	PolicyRefresh time.Duration
	// ScanBudget bounds the rows a bit page reads (default
	// DefaultScanBudget).
	ScanBudget int
	// SecureCookies marks the login cookie Secure (always set it when
	// users reach the console over HTTPS).
	SecureCookies bool
	// LogoutURL, in the ALB mode, is where logging out leads (the
	// identity provider's logout page); empty: back to the console, which
	// signs in again.
	LogoutURL string
	// Where describes the sources in the page footer ("s3://mill-config/,
	// PostgreSQL, queues mill-*"); no secrets.
	Where string
	// Clock (default the system clock); Logger (default slog.Default()).
	Clock  clock.Clock
	Logger *slog.Logger
}

// defaultConfig holds the values withDefaults gives a Config's zero fields.
var defaultConfig = Config{
	Refresh:          DefaultRefresh,
	SampleEvery:      DefaultSampleEvery,
	HistoryWindow:    DefaultHistoryWindow,
	PolicyRefresh:    DefaultPolicyRefresh,
	ScanBudget:       DefaultScanBudget,
	DeadLetterRescan: DefaultDeadLetterRescan,
	DeadLetterMax:    DefaultDeadLetterMax,
}

func (c Config) withDefaults() Config {
	defaults.Fill(&c, defaultConfig)
	c.Clock, c.Logger = clock.Ambient(c.Clock, c.Logger)
	return c
}

func (c Config) validate() error {
	p := validate.Struct("console: Config", c)
	if c.Auth != nil {
		p.Add("AllowedHosts", CheckAllowedHosts(c.AllowedHosts, c.Auth))
	}
	p.Check(c.DeadLetterRescan >= time.Second, "DeadLetterRescan", c.DeadLetterRescan, "be at least 1s")
	p.Check(c.DeadLetterMax >= 1, "DeadLetterMax", c.DeadLetterMax, "be positive")
	p.Check(c.Refresh >= time.Second, "Refresh", c.Refresh, "be at least 1s")
	p.Check(c.SampleEvery >= time.Second && c.SampleEvery <= c.HistoryWindow, "SampleEvery", c.SampleEvery, "be at least 1s and at most HistoryWindow %s", c.HistoryWindow)
	return p.Err()
}

// Server is a console. Its handler serves the pages; Run samples the
// queues for the depth charts.
type Server struct {
	cfg     Config
	hosts   hostPolicy
	editor  *policyedit.Editor
	tmpl    map[string]*template.Template
	handler http.Handler
	samples *sampler
	dl      *dlIndex // nil without Config.DeadLetters
	cov     coverageCache
	// bg is the context of work that outlives a request (dead-letter
	// scans and jobs, their change-log records); Serve cancels it.
	bg   context.Context
	stop context.CancelFunc
}

// New returns a console.
func New(cfg Config) (*Server, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, editor: policyedit.New(cfg.Files), hosts: newHostPolicy(cfg.AllowedHosts, cfg.Auth)}
	s.bg, s.stop = context.WithCancel(context.Background())
	if cfg.DeadLetters != nil {
		s.dl = newDLIndex(s.bg, cfg.DeadLetters, cfg.Clock, cfg.Logger, cfg.DeadLetterRescan, cfg.DeadLetterMax)
	}
	tmpl, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	s.tmpl = tmpl
	s.samples = newSampler(cfg.Queues, cfg.Clock, cfg.SampleEvery, cfg.HistoryWindow, cfg.Refresh, cfg.Logger)
	s.handler = s.routes()
	return s, nil
}

// Handler returns the console's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// Run starts the first scan of the dead-letter queue, so its page has an
// index when someone opens it, and samples the queues every SampleEvery
// until ctx ends.
func (s *Server) Run(ctx context.Context) {
	if s.dl != nil {
		s.dl.refresh(false)
	}
	s.samples.run(ctx)
}

// Close stops the background work of the dead-letter page (a scan, a
// redrive or purge in progress ends; what a scan holds is released).
// Serve calls it when it returns.
func (s *Server) Close() { s.stop() }

// CheckListen refuses to serve without authentication anywhere but on a
// loopback address: addr is what the server listens on ("127.0.0.1:8080",
// "[::1]:8080", "localhost:8080").
func CheckListen(addr string, a auth.Authenticator) error {
	if a.Mode() != "none" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("console: listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("console: --auth none serves anyone who can reach %q; it is allowed only on a loopback address (127.0.0.1, ::1, localhost) — use --auth tokens or --auth alb", addr)
}

// Serve serves the console on ln until ctx ends, then shuts down
// gracefully, and samples the queues meanwhile.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if err := CheckListen(ln.Addr().String(), s.cfg.Auth); err != nil {
		ln.Close()
		return err
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      5 * time.Minute, // report downloads
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelWarn),
	}
	var wg sync.WaitGroup
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	wg.Go(func() { s.Run(sctx) })
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	s.cfg.Logger.Info("console listening", "addr", ln.Addr().String(), "auth", s.cfg.Auth.Mode())
	var err error
	select {
	case err = <-errc:
	case <-ctx.Done():
		sh, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err = srv.Shutdown(sh)
		cancel()
		<-errc
	}
	stop()
	wg.Wait()
	s.Close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// pageHandler serves a page to the signed-in user u.
type pageHandler func(w http.ResponseWriter, r *http.Request, u *auth.User)

// routeFunc registers a page: its pattern, the role it needs and its
// handler. Each part of the console registers its own pages with it
// (policyRoutes, bitRoutes, ...).
type routeFunc func(pattern string, need auth.Role, h pageHandler)

// routes builds the handler: security headers around everything, then
// the Host check, the check of the path and query string, cross-origin
// protection, then authentication, then the pages.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	assets, _ := fs.Sub(assetFS, "assets")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", cacheAssets(http.FileServerFS(assets))))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /login", s.loginPage)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", s.logout)

	var route routeFunc = func(pattern string, need auth.Role, h pageHandler) {
		mux.Handle(pattern, s.authenticated(need, h))
	}
	route("GET /{$}", auth.RoleViewer, s.homePage)
	route("GET /runs/{producer}/{id}", auth.RoleViewer, s.producerRunPage)
	s.itemRoutes(route)
	s.policyRoutes(route)
	s.queueRoutes(route)
	s.bitRoutes(route)
	s.optionalRoutes(route)
	s.otherRoutes(route)

	return securityHeaders(s.checkHost(s.checkInput(s.checkOrigin(mux))))
}

// securityHeaders sets the headers every response carries.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", CSP)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("Cross-Origin-Opener-Policy", "same-origin")
		hd.Set("Cross-Origin-Resource-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, "/assets/") {
			hd.Set("Cache-Control", "no-store")
		}
		h.ServeHTTP(w, r)
	})
}

func cacheAssets(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		h.ServeHTTP(w, r)
	})
}

type userKey struct{}

// authenticated wraps a page: the user must be authenticated and have the
// role need. A GET without credentials is sent to the login form (tokens
// mode); anything else gets 401 or 403.
func (s *Server) authenticated(need auth.Role, h pageHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, err := s.cfg.Auth.Authenticate(r)
		if err != nil {
			if errors.Is(err, auth.ErrRefused) {
				s.cfg.Logger.Warn("console: credentials refused", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			}
			if r.Method == http.MethodGet && s.cfg.Auth.Mode() == "tokens" {
				http.Redirect(w, r, "/login", http.StatusSeeOther)
				return
			}
			s.errorPage(w, r, nil, http.StatusUnauthorized, "Not signed in", "The console could not tell who you are.")
			return
		}
		if !u.Role.Can(need) {
			s.cfg.Logger.Warn("console: forbidden", "user", u.Name, "role", u.Role.String(), "need", need.String(), "method", r.Method, "path", r.URL.Path)
			s.errorPage(w, r, u, http.StatusForbidden, "Not allowed", fmt.Sprintf("This needs the %s role; you are a %s.", need, u.Role))
			return
		}
		h(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)), u)
	})
}

// record writes a change to the change log and the log. A change that
// could not be recorded is logged as an error and reported to the user:
// the change itself has been made.
func (s *Server) record(ctx context.Context, u *auth.User, c changelog.Change) error {
	c.User, c.Role = u.Name, u.Role.String()
	s.cfg.Logger.Info("console: change", "user", u.Name, "role", c.Role, "action", c.Action, "target", c.Target,
		"summary", c.Summary, "before", c.Before, "after", c.After)
	if _, err := s.cfg.Changes.Record(context.WithoutCancel(ctx), c); err != nil {
		s.cfg.Logger.Error("console: change made but not recorded in the change log", "user", u.Name, "action", c.Action, "target", c.Target, "err", err)
		return err
	}
	return nil
}
