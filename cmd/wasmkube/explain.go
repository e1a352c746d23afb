package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
)

func init() {
	explainCmd := &cobra.Command{Use: "explain", Short: "Explain decisions of the control plane"}
	var kubeconfig, namespace, output string
	podCmd := &cobra.Command{
		Use:   "pod NAME",
		Short: "Show why the scheduler put a pod where it did (or nowhere)",
		Long: `Print the scheduler's explanation of its last decision for a pod: for the best nodes, each
Score plugin's score (normalized, times its weight) and the total; for the rejected nodes, which
Filter plugin rejected them and why. The scheduler stores it in the annotation
` + scheduler.ExplainAnnotation + `: of the pod when it binds it (with the Binding), of the pod's
FailedScheduling event when it finds no node.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("--output %q: must be table or json", output)
			}
			rules := clientcmd.NewDefaultClientConfigLoadingRules()
			rules.ExplicitPath = kubeconfig
			cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{})
			cfg, err := cc.ClientConfig()
			if err != nil {
				return fmt.Errorf("kubeconfig: %w", err)
			}
			if namespace == "" {
				if namespace, _, err = cc.Namespace(); err != nil || namespace == "" {
					namespace = "default"
				}
			}
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			pod, err := client.CoreV1().Pods(namespace).Get(ctx, args[0], metav1.GetOptions{})
			if err != nil {
				return fmt.Errorf("pod %s/%s: %w", namespace, args[0], err)
			}
			raw, err := scheduler.PodExplanation(ctx, client, pod)
			if err != nil {
				return err
			}
			if raw == "" {
				return fmt.Errorf("pod %s/%s has no scheduler explanation (annotation %s on the pod or on its FailedScheduling event): the wasmkube scheduler has not tried it yet, explanations are off (scheduler.explainTopNodes < 0), or its event has expired (see docs/scheduler.md)",
					namespace, pod.Name, scheduler.ExplainAnnotation)
			}
			var e runtime.Explanation
			if err := json.Unmarshal([]byte(raw), &e); err != nil {
				return fmt.Errorf("pod %s/%s: annotation %s is not a scheduler explanation: %w", namespace, pod.Name, scheduler.ExplainAnnotation, err)
			}
			if output == "json" {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(&e)
			}
			printExplanation(cmd.OutOrStdout(), namespace+"/"+pod.Name, &e)
			return nil
		},
	}
	podCmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	podCmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the pod (default: the kubeconfig's, else default)")
	podCmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	explainCmd.AddCommand(podCmd)
	rootCmd.AddCommand(explainCmd)
}

// printExplanation writes an explanation as readable tables.
func printExplanation(w io.Writer, pod string, e *runtime.Explanation) {
	switch e.Result {
	case "Scheduled":
		fmt.Fprintf(w, "Pod %s: scheduled on %s by profile %s at %s\n", pod, e.Node, e.Profile, e.Time)
	default:
		fmt.Fprintf(w, "Pod %s: %s (profile %s, %s)\n", pod, e.Result, e.Profile, e.Time)
		if e.Message != "" {
			fmt.Fprintf(w, "  %s\n", e.Message)
		}
	}
	fmt.Fprintf(w, "Nodes: %d in the cluster, %d evaluated by Filter, %d feasible\n", e.Nodes, e.Evaluated, e.Feasible)
	if len(e.FilterPlugins) > 0 {
		fmt.Fprintf(w, "Filter plugins: %s", strings.Join(e.FilterPlugins, ", "))
		if len(e.SkippedFilter) > 0 {
			fmt.Fprintf(w, " (skipped, nothing to check for this pod: %s)", strings.Join(e.SkippedFilter, ", "))
		}
		fmt.Fprintln(w)
	}
	if len(e.Top) > 0 {
		fmt.Fprintf(w, "\nBest nodes (every Filter plugin passed; scores are normalized 0-100 times the weight):\n")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		head := []string{"NODE", "TOTAL"}
		skipped := map[string]bool{}
		for _, s := range e.SkippedScore {
			skipped[s] = true
		}
		for _, p := range e.ScorePlugins {
			h := fmt.Sprintf("%s(x%d)", p.Name, p.Weight)
			if skipped[p.Name] {
				h += "[skip]"
			}
			head = append(head, h)
		}
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, n := range e.Top {
			row := []string{n.Node, fmt.Sprint(n.Total)}
			for _, s := range n.Scores {
				row = append(row, fmt.Sprint(s))
			}
			if n.Node == e.Node {
				row[0] += " *"
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		tw.Flush()
	}
	if len(e.RejectCounts) > 0 {
		fmt.Fprintf(w, "\nRejected nodes by plugin and reason:\n")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PLUGIN\tREASON\tNODES")
		for _, r := range e.RejectCounts {
			fmt.Fprintf(tw, "%s\t%s\t%d\n", r.Plugin, r.Reason, r.Count)
		}
		tw.Flush()
	}
	if len(e.Rejected) > 0 {
		fmt.Fprintf(w, "\nSome rejected nodes:\n")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NODE\tPLUGIN\tCODE\tREASON")
		for _, r := range e.Rejected {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Node, r.Plugin, r.Code, r.Reason)
		}
		tw.Flush()
	}
}
