// registry-client asks a registry server (opm serve, kubectl-olm catalog serve) every question of
// the registry API through operator-registry's own Go client (pkg/client), and prints the answers
// as one JSON object keyed by call, for tests/it/grpc_interop.rs to compare between two servers.
//
// Usage: registry-client HOST:PORT
//
// The questions are derived from the catalog itself (every package, channel, bundle, replaced
// name and provided API), plus names that do not exist. Answers are normalised so that only
// differences a client could notice remain:
//   - lists whose order the API leaves open (packages, channel entries, properties,
//     dependencies, APIs) are sorted; ListBundles is sorted by package, channel and bundle;
//   - JSON carried in strings (csvJson, object, property and dependency values) is parsed, and
//     nulls, empty strings, empty lists and empty objects are dropped (Go writes zero values that
//     carry nothing);
//   - an error is its gRPC code and message;
//   - GetBundleThatReplaces, where several entries of the channel replace the name (upstream picks
//     one at random), answers with the candidates and whether the answer is one of them.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"google.golang.org/grpc/status"

	"github.com/operator-framework/operator-registry/pkg/api"
	"github.com/operator-framework/operator-registry/pkg/client"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: registry-client HOST:PORT")
		os.Exit(2)
	}
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

type answers map[string]any

func failure(err error) any {
	s, _ := status.FromError(err)
	return map[string]any{"error": s.Code().String(), "message": s.Message()}
}

// pruned parses JSON text and drops empty values; text that is not JSON is kept as a string.
func pruned(text string) any {
	if text == "" {
		return nil
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return map[string]any{"notJSON": text}
	}
	return prune(v)
}

func prune(v any) any {
	switch t := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, x := range t {
			if p := prune(x); p != nil {
				out[k] = p
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		out := []any{}
		for _, x := range t {
			if p := prune(x); p != nil {
				out = append(out, p)
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case string:
		if t == "" {
			return nil
		}
	case nil:
		return nil
	}
	return v
}

func key(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func sortedByKey(items []any) []any {
	sort.Slice(items, func(i, j int) bool { return key(items[i]) < key(items[j]) })
	return items
}

func gvks(in []*api.GroupVersionKind) []any {
	out := []any{}
	for _, g := range in {
		out = append(out, map[string]string{"group": g.Group, "version": g.Version, "kind": g.Kind, "plural": g.Plural})
	}
	return sortedByKey(out)
}

func bundle(b *api.Bundle) any {
	objects := []any{}
	for _, o := range b.Object {
		objects = append(objects, pruned(o))
	}
	props := []any{}
	for _, p := range b.Properties {
		props = append(props, map[string]any{"type": p.Type, "value": pruned(p.Value)})
	}
	deps := []any{}
	for _, d := range b.Dependencies {
		deps = append(deps, map[string]any{"type": d.Type, "value": pruned(d.Value)})
	}
	out := map[string]any{
		"csvName":      b.CsvName,
		"packageName":  b.PackageName,
		"channelName":  b.ChannelName,
		"bundlePath":   b.BundlePath,
		"version":      b.Version,
		"skipRange":    b.SkipRange,
		"replaces":     b.Replaces,
		"skips":        b.Skips,
		"providedApis": gvks(b.ProvidedApis),
		"requiredApis": gvks(b.RequiredApis),
		"dependencies": sortedByKey(deps),
		"properties":   sortedByKey(props),
		"csvJson":      pruned(b.CsvJson),
		"object":       objects,
	}
	if b.Deprecation != nil {
		out["deprecation"] = b.Deprecation.Message
	}
	return out
}

func entries(in []*api.ChannelEntry) any {
	out := []any{}
	for _, e := range in {
		out = append(out, map[string]string{"package": e.PackageName, "channel": e.ChannelName, "bundle": e.BundleName, "replaces": e.Replaces})
	}
	return sortedByKey(out)
}

type entryStream interface {
	Recv() (*api.ChannelEntry, error)
}

func drain(s entryStream, err error) any {
	if err != nil {
		return failure(err)
	}
	var list []*api.ChannelEntry
	for {
		e, err := s.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return failure(err)
		}
		list = append(list, e)
	}
	return entries(list)
}

func run(addr string) error {
	c, err := client.NewClient(addr)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out := answers{}

	healthy, err := c.HealthCheck(ctx, 5*time.Second)
	if err != nil {
		out["HealthCheck(Registry)"] = failure(err)
	} else {
		out["HealthCheck(Registry)"] = healthy
	}

	stream, err := c.Registry.ListPackages(ctx, &api.ListPackageRequest{})
	if err != nil {
		return fmt.Errorf("ListPackages: %w", err)
	}
	var names []string
	for {
		p, err := stream.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return fmt.Errorf("ListPackages: %w", err)
		}
		names = append(names, p.Name)
	}
	sort.Strings(names)
	out["ListPackages"] = names

	for _, name := range append(names, "no-such-package") {
		p, err := c.GetPackage(ctx, name)
		if err != nil {
			out["GetPackage("+name+")"] = failure(err)
			continue
		}
		channels := []any{}
		for _, ch := range p.Channels {
			entry := map[string]any{"name": ch.Name, "head": ch.CsvName}
			if ch.Deprecation != nil {
				entry["deprecation"] = ch.Deprecation.Message
			}
			channels = append(channels, entry)
			b, err := c.GetBundleInPackageChannel(ctx, name, ch.Name)
			if err != nil {
				out["GetBundleForChannel("+name+"/"+ch.Name+")"] = failure(err)
			} else {
				out["GetBundleForChannel("+name+"/"+ch.Name+")"] = bundle(b)
			}
		}
		pkg := map[string]any{"name": p.Name, "defaultChannel": p.DefaultChannelName, "channels": sortedByKey(channels)}
		if p.Deprecation != nil {
			pkg["deprecation"] = p.Deprecation.Message
		}
		out["GetPackage("+name+")"] = pkg
	}

	it, err := c.ListBundles(ctx)
	if err != nil {
		return fmt.Errorf("ListBundles: %w", err)
	}
	var listed []*api.Bundle
	for b := it.Next(); b != nil; b = it.Next() {
		listed = append(listed, b)
	}
	if err := it.Error(); err != nil {
		return fmt.Errorf("ListBundles: %w", err)
	}
	sort.Slice(listed, func(i, j int) bool {
		a, b := listed[i], listed[j]
		return a.PackageName+"\x00"+a.ChannelName+"\x00"+a.CsvName < b.PackageName+"\x00"+b.ChannelName+"\x00"+b.CsvName
	})
	all := []any{}
	for _, b := range listed {
		all = append(all, bundle(b))
	}
	out["ListBundles"] = all

	// Which entries of a channel replace (or skip) a name: GetBundleThatReplaces picks one.
	replacers := map[string][]string{}
	for _, b := range listed {
		for _, r := range append([]string{b.Replaces}, b.Skips...) {
			if r == "" {
				continue
			}
			k := b.PackageName + "/" + b.ChannelName + "/" + r
			if len(replacers[k]) == 0 || replacers[k][len(replacers[k])-1] != b.CsvName {
				replacers[k] = append(replacers[k], b.CsvName)
			}
		}
	}
	providers := map[string]*api.GroupVersionKind{}
	asked := map[string]bool{}
	for _, b := range listed {
		id := b.PackageName + "/" + b.ChannelName + "/" + b.CsvName
		if got, err := c.GetBundle(ctx, b.PackageName, b.ChannelName, b.CsvName); err != nil {
			out["GetBundle("+id+")"] = failure(err)
		} else {
			out["GetBundle("+id+")"] = bundle(got)
		}
		if !asked[b.CsvName] {
			asked[b.CsvName] = true
			s, err := c.Registry.GetChannelEntriesThatReplace(ctx, &api.GetAllReplacementsRequest{CsvName: b.CsvName})
			out["GetChannelEntriesThatReplace("+b.CsvName+")"] = drain(s, err)
		}
		for _, r := range append([]string{b.Replaces}, b.Skips...) {
			if r == "" {
				continue
			}
			k := b.PackageName + "/" + b.ChannelName + "/" + r
			call := "GetBundleThatReplaces(" + k + ")"
			got, err := c.GetReplacementBundleInPackageChannel(ctx, r, b.PackageName, b.ChannelName)
			switch {
			case err != nil:
				out[call] = failure(err)
			case len(replacers[k]) > 1:
				candidates := append([]string{}, replacers[k]...)
				sort.Strings(candidates)
				found := false
				for _, n := range candidates {
					found = found || n == got.CsvName
				}
				out[call] = map[string]any{"oneOf": candidates, "answerIsOneOfThem": found}
			default:
				out[call] = bundle(got)
			}
		}
		for _, g := range b.ProvidedApis {
			providers[g.Group+"/"+g.Version+"/"+g.Kind] = g
		}
		out["GetBundle("+b.PackageName+"/"+b.ChannelName+"/no-such-bundle)"] = failure(errOf(c.GetBundle(ctx, b.PackageName, b.ChannelName, "no-such-bundle")))
		out["GetBundle("+b.PackageName+"/no-such-channel/"+b.CsvName+")"] = failure(errOf(c.GetBundle(ctx, b.PackageName, "no-such-channel", b.CsvName)))
		out["GetBundleThatReplaces("+b.PackageName+"/"+b.ChannelName+"/no-such-bundle)"] = failure(errOf(c.GetReplacementBundleInPackageChannel(ctx, "no-such-bundle", b.PackageName, b.ChannelName)))
	}
	providers["no.such.group/v1/Nothing"] = &api.GroupVersionKind{Group: "no.such.group", Version: "v1", Kind: "Nothing"}
	for id, g := range providers {
		s, err := c.Registry.GetChannelEntriesThatProvide(ctx, &api.GetAllProvidersRequest{Group: g.Group, Version: g.Version, Kind: g.Kind})
		out["GetChannelEntriesThatProvide("+id+")"] = drain(s, err)
		l, err := c.Registry.GetLatestChannelEntriesThatProvide(ctx, &api.GetLatestProvidersRequest{Group: g.Group, Version: g.Version, Kind: g.Kind})
		out["GetLatestChannelEntriesThatProvide("+id+")"] = drain(l, err)
		if b, err := c.GetBundleThatProvides(ctx, g.Group, g.Version, g.Kind); err != nil {
			out["GetDefaultBundleThatProvides("+id+")"] = failure(err)
		} else {
			out["GetDefaultBundleThatProvides("+id+")"] = bundle(b)
		}
	}
	s, err := c.Registry.GetChannelEntriesThatReplace(ctx, &api.GetAllReplacementsRequest{CsvName: "no-such-bundle"})
	out["GetChannelEntriesThatReplace(no-such-bundle)"] = drain(s, err)

	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func errOf(_ *api.Bundle, err error) error {
	if err == nil {
		return fmt.Errorf("unexpected answer")
	}
	return err
}
