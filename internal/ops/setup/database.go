package setup

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/millfleet/mill/pkg/milldb"
)

// Database is the PostgreSQL schema: the milldb migrations.
type Database struct {
	URL string
	// Config tunes the pool setup opens (zero value: milldb defaults).
	Config milldb.Config
}

// Kind implements Resource.
func (d *Database) Kind() string { return "database" }

// Name is host:port/database, with the schema when the URL sets a
// search_path; never the password.
func (d *Database) Name() string {
	c, err := pgx.ParseConfig(d.URL)
	if err != nil {
		return "(unparsable database URL)"
	}
	n := net.JoinHostPort(c.Host, strconv.Itoa(int(c.Port))) + "/" + c.Database
	if sp := c.RuntimeParams["search_path"]; sp != "" {
		n += " (schema " + sp + ")"
	}
	return n
}

func (d *Database) open(ctx context.Context) (*milldb.DB, error) {
	cfg := d.Config
	if cfg.MaxConns == 0 {
		cfg.MaxConns = 2
	}
	return milldb.Open(ctx, d.URL, cfg)
}

// Plan implements Resource: pending migrations mean create (none applied
// yet) or update (some applied).
func (d *Database) Plan(ctx context.Context) (Change, error) {
	db, err := d.open(ctx)
	if err != nil {
		return Change{}, err
	}
	defer db.Close()
	st, err := milldb.Status(ctx, db.Pool)
	if err != nil {
		return Change{}, err
	}
	var pending []string
	for _, s := range st {
		if !s.Applied {
			pending = append(pending, fmt.Sprintf("%03d_%s", s.Version, s.Name))
		}
	}
	switch {
	case len(pending) == 0:
		return Change{Action: ActionNone}, nil
	case len(pending) == len(st):
		return Change{Action: ActionCreate, Reasons: []string{"apply migrations " + strings.Join(pending, ", ")}}, nil
	default:
		return Change{Action: ActionUpdate, Reasons: []string{"apply migrations " + strings.Join(pending, ", ")}}, nil
	}
}

// Apply implements Resource.
func (d *Database) Apply(ctx context.Context, c Change) (Result, error) {
	db, err := d.open(ctx)
	if err != nil {
		return Result{}, err
	}
	defer db.Close()
	steps, err := milldb.Up(ctx, db.Pool)
	if err != nil {
		return Result{}, err
	}
	if len(steps) == 0 { // another process migrated it meanwhile
		return Result{Status: StatusExists}, nil
	}
	ids := make([]string, len(steps))
	for i, s := range steps {
		ids[i] = s.Migration.ID()
	}
	status := StatusUpdated
	if c.Action == ActionCreate {
		status = StatusCreated
	}
	return Result{Status: status, Details: []string{"applied migrations " + strings.Join(ids, ", ")}}, nil
}
