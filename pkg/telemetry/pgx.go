package telemetry

import (
	"context"
	"strings"
	"unicode"

	"github.com/jackc/pgx/v5"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// maxStatement bounds the SQL text recorded on a span. Only the statement
// is recorded, never its arguments (they hold account, space and content
// IDs and checksums).
const maxStatement = 1024

// PGX returns a pgx.QueryTracer that gives each PostgreSQL query a client
// span (child of the query's ctx) named after its first word ("SELECT",
// "INSERT", …), or nil with t off: set it as the pool's ConnConfig.Tracer
// (milldb.Config.Tracer).
func (t *Tracing) PGX() pgx.QueryTracer {
	if t == nil {
		return nil
	}
	return pgxTracer{t: t}
}

type pgxTracer struct{ t *Tracing }

func (p pgxTracer) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	sql := strings.TrimSpace(data.SQL)
	op := sql
	if i := strings.IndexFunc(sql, unicode.IsSpace); i >= 0 {
		op = sql[:i]
	}
	if len(sql) > maxStatement {
		sql = sql[:maxStatement]
	}
	attrs := []attribute.KeyValue{attribute.String("db.system.name", "postgresql"),
		attribute.String("db.operation.name", strings.ToUpper(op)), attribute.String("db.query.text", sql)}
	if conn != nil {
		if c := conn.Config(); c != nil {
			attrs = append(attrs, attribute.String("db.namespace", c.Database))
		}
	}
	ctx, _ = p.t.tracer.Start(ctx, "postgresql "+strings.ToUpper(op), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx
}

func (p pgxTracer) TraceQueryEnd(ctx context.Context, _ *pgx.Conn, data pgx.TraceQueryEndData) {
	span := trace.SpanFromContext(ctx)
	if data.Err == nil {
		span.SetAttributes(attribute.Int64("db.response.rows_affected", data.CommandTag.RowsAffected()))
	}
	endSpan(span, data.Err)
}
