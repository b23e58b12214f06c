package main

import (
	"strings"

	"github.com/kcache/kcache/disk"
	"github.com/spf13/cobra"
)

// maxCompletions bounds the IDs offered for completion: past a screenful a
// person types more digits anyway.
const maxCompletions = 200

// completeIDs completes up to n positional arguments with the IDs of the
// cache's entries, each described by its device and kernels.
func completeIDs(n int) cobra.CompletionFunc {
	return func(cmd *cobra.Command, a []string, prefix string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(a) >= n {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		st, err := openExisting()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		prefix = strings.ToLower(prefix)
		var out []cobra.Completion
		st.Walk(cmd.Context(), func(in disk.Info) error {
			if in.Key == nil || !strings.HasPrefix(in.ID(), prefix) || len(out) >= maxCompletions {
				return nil
			}
			desc := in.Key.Device.Name + " " + kernelsLabel(kernelNames(in.Key.Image.Source))
			out = append(out, cobra.CompletionWithDesc(in.ID(), desc))
			return nil
		})
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}
