package main

import (
	"context"
	"flag"
	"maps"

	"github.com/millfleet/mill/pkg/storage"
)

const contentPropsUsage = "millctl content props ACCOUNT STORE SPACE CONTENT_ID\n\nPrints the item's metadata as JSON."

// contentPropsOptions are the options of content props.
type contentPropsOptions struct{ contentEnv }

func (o *contentPropsOptions) define(fs *flag.FlagSet, a *app) { o.contentEnv.define(fs, a, false) }

func (o *contentPropsOptions) run(ctx context.Context, a *app, args []string) error {
	p, err := o.itemProvider(ctx, args, false)
	if err != nil {
		return err
	}
	info, err := p.Head(ctx, args[2], args[3])
	if err != nil {
		return err
	}
	return printInfo(a.stdout, info)
}

const contentPropsSetUsage = `millctl content props set ACCOUNT STORE SPACE CONTENT_ID KEY=VALUE...

Merges the KEY=VALUE pairs into the item's properties (--replace: they become
the only properties; --delete KEY removes one) through the audited provider
(SET_CONTENT_PROPERTIES), then prints the item's metadata.`

// contentPropsSetOptions are the options of content props set.
type contentPropsSetOptions struct {
	contentEnv
	replace bool
	del     stringList
}

func (o *contentPropsSetOptions) define(fs *flag.FlagSet, a *app) {
	o.contentEnv.define(fs, a, true)
	fs.BoolVar(&o.replace, "replace", false, "replace all properties instead of merging")
	fs.Var(&o.del, "delete", "remove property `KEY` (repeatable)")
}

func (o *contentPropsSetOptions) run(ctx context.Context, a *app, args []string) error {
	if len(args) < 4 || (len(args) == 4 && len(o.del) == 0 && !o.replace) {
		return usagef("want ACCOUNT STORE SPACE CONTENT_ID KEY=VALUE...")
	}
	set := propsFlag{}
	for _, kv := range args[4:] {
		if err := set.Set(kv); err != nil {
			return usagef("%v", err)
		}
	}
	p, err := o.provider(ctx, args[0], args[1], true)
	if err != nil {
		return err
	}
	space, id := args[2], args[3]
	info, err := p.Head(ctx, space, id)
	if err != nil {
		return err
	}
	props := storage.UserProperties(info.Properties)
	if o.replace {
		props = map[string]string{}
	}
	maps.Copy(props, set)
	for _, k := range o.del {
		delete(props, k)
	}
	if err := p.SetProperties(ctx, space, id, props); err != nil {
		return auditNote(err)
	}
	info, err = p.Head(ctx, space, id)
	if err != nil {
		return err
	}
	return printInfo(a.stdout, info)
}
