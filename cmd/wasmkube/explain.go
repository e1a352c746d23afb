package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	explorerv1 "github.com/wasmkube/wasmkube/core/apis/explorer/v1alpha1"
	"github.com/wasmkube/wasmkube/core/explorer"
	"github.com/wasmkube/wasmkube/core/scheduler"
	"github.com/wasmkube/wasmkube/core/scheduler/runtime"
)

func init() {
	explainCmd := &cobra.Command{Use: "explain", Short: "Explain decisions of the control plane"}
	var kubeconfig, namespace, output string
	podCmd := &cobra.Command{
		Use:   "pod NAME",
		Short: "Show why the scheduler put a pod where it did (or nowhere)",
		Long: `Print the scheduler's last decision for a pod: for the best nodes, each Score plugin's score
(raw, normalized, times its weight) and the total; for the rejected nodes, which Filter plugin
rejected them and why. It reads the decision explorer's records
(/apis/explorer.wasmkube.io/v1alpha1/namespaces/NS/pods/NAME, which needs get on the pod), and
prints the URL of the pod's page; when the server holds no record of the pod, the explanation
the scheduler stores in the annotation ` + scheduler.ExplainAnnotation + `: of the pod when it
binds it (with the Binding), of the pod's FailedScheduling event when it finds no node.`,
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
			pageURL := strings.TrimSuffix(cfg.Host, "/") + explorer.PodPagePath(namespace, pod.Name)
			proxyURL := "http://127.0.0.1:8001" + explorer.PodPagePath(namespace, pod.Name)
			// The decision explorer's records first (the same data as the page); the
			// explanation annotation when the server has none (records off, or gone from
			// its ring) or only a summary of the newest attempt (the scheduler's push was
			// over its CPU budget, docs/explorer.md), which has no table to print.
			if pd, err := podDecisions(ctx, client, namespace, pod.Name); err == nil && latestAttempt(pd) != nil && (output == "json" || !latestSummarized(pd)) {
				if output == "json" {
					enc := json.NewEncoder(cmd.OutOrStdout())
					enc.SetIndent("", "  ")
					fmt.Fprintf(cmd.ErrOrStderr(), "Page: %s (through kubectl proxy: %s)\n", pageURL, proxyURL)
					return enc.Encode(pd)
				}
				printAttempt(cmd.OutOrStdout(), namespace+"/"+pod.Name, pod.Spec.NodeName, pd)
				fmt.Fprintf(cmd.OutOrStdout(), "\nPage: %s\n  through kubectl proxy: %s\n", pageURL, proxyURL)
				return nil
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
			printExplanation(cmd.OutOrStdout(), namespace+"/"+pod.Name, pod.Spec.NodeName, &e)
			fmt.Fprintf(cmd.OutOrStdout(), "\nPage: %s\n  through kubectl proxy: %s\n", pageURL, proxyURL)
			return nil
		},
	}
	podCmd.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	podCmd.Flags().StringVarP(&namespace, "namespace", "n", "", "namespace of the pod (default: the kubeconfig's, else default)")
	podCmd.Flags().StringVarP(&output, "output", "o", "table", "table or json")
	explainCmd.AddCommand(podCmd)
	rootCmd.AddCommand(explainCmd)
}

// placed says where a scheduling cycle put the pod: a cycle that chose a node is not yet a
// binding while the pod waits at Permit (a gang's members wait for the group) or in PreBind.
func placed(node, bound string) string {
	if bound == "" {
		return "assigned to " + node + ", not bound yet (waiting at Permit, e.g. for its group, or in binding)"
	}
	return "scheduled on " + node
}

// printExplanation writes an explanation as readable tables; bound is the pod's
// spec.nodeName now.
func printExplanation(w io.Writer, pod, bound string, e *runtime.Explanation) {
	switch e.Result {
	case "Scheduled":
		fmt.Fprintf(w, "Pod %s: %s by profile %s at %s\n", pod, placed(e.Node, bound), e.Profile, e.Time)
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

// podDecisions reads a pod's decision records from the API server.
func podDecisions(ctx context.Context, client kubernetes.Interface, ns, name string) (*explorerv1.PodDecisions, error) {
	res := client.CoreV1().RESTClient().Get().AbsPath(explorerv1.PathPrefix, "namespaces", ns, "pods", name).Do(ctx)
	if err := res.Error(); err != nil {
		return nil, err
	}
	raw, _ := res.Raw()
	var pd explorerv1.PodDecisions
	if err := json.Unmarshal(raw, &pd); err != nil {
		return nil, fmt.Errorf("pod %s/%s: the decision records are not a PodDecisions: %w", ns, name, err)
	}
	return &pd, nil
}

// latestAttempt is the pod's newest scheduling attempt (nil: none recorded).
func latestAttempt(pd *explorerv1.PodDecisions) *explorerv1.SchedulingAttempt {
	var a *explorerv1.SchedulingAttempt
	for i := range pd.Records {
		if pd.Records[i].SchedulingAttempt != nil {
			a = pd.Records[i].SchedulingAttempt
		}
	}
	return a
}

// latestSummarized tells whether the newest attempt was recorded as a summary only.
func latestSummarized(pd *explorerv1.PodDecisions) bool {
	summarized := false
	for i := range pd.Records {
		if pd.Records[i].SchedulingAttempt != nil {
			summarized = pd.Records[i].Summarized
		}
	}
	return summarized
}

// printAttempt writes the newest attempt's node x plugin matrix, then the pod's refused
// admission requests and its kubelet hook runs.
func printAttempt(w io.Writer, pod, bound string, pd *explorerv1.PodDecisions) {
	a := latestAttempt(pd)
	attempts := 0
	for _, r := range pd.Records {
		if r.SchedulingAttempt != nil {
			attempts++
		}
	}
	switch a.Result {
	case explorerv1.ResultScheduled:
		fmt.Fprintf(w, "Pod %s: %s by profile %s (attempt %d; %d recorded)\n", pod, placed(a.Node, bound), a.Profile, a.Attempt, attempts)
	default:
		fmt.Fprintf(w, "Pod %s: %s (profile %s, attempt %d; %d recorded)\n", pod, a.Result, a.Profile, a.Attempt, attempts)
		if a.Message != "" {
			fmt.Fprintf(w, "  %s\n", a.Message)
		}
	}
	if a.PostFilter != nil {
		fmt.Fprintf(w, "  PostFilter: %s %s %s\n", a.PostFilter.Verdict, a.PostFilter.NominatedNode, a.PostFilter.Message)
	}
	fmt.Fprintf(w, "Nodes: %d in the cluster, %d evaluated by Filter, %d feasible\n", a.Nodes, a.Evaluated, a.Feasible)
	name := func(p explorerv1.Plugin) string {
		if p.Wasm != nil {
			return p.Name + "[wasm]"
		}
		return p.Name
	}
	var feasible, rejected []explorerv1.MatrixRow
	for _, row := range a.Matrix {
		if len(row.Scores) > 0 || rejectedBy(a, row) == "" {
			feasible = append(feasible, row)
		} else {
			rejected = append(rejected, row)
		}
	}
	if len(feasible) > 0 {
		fmt.Fprintf(w, "\nFeasible nodes (each Score plugin: weighted = normalized x weight, raw in brackets):\n")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		head := []string{"NODE", "FINAL"}
		for _, p := range a.ScorePlugins {
			head = append(head, fmt.Sprintf("%s(x%d)", name(p), p.Weight))
		}
		fmt.Fprintln(tw, strings.Join(head, "\t"))
		for _, row := range feasible {
			cells := []string{row.Node, fmt.Sprint(row.Final)}
			if row.Chosen {
				cells[0] += " *"
			}
			for _, s := range row.Scores {
				cells = append(cells, fmt.Sprintf("%d [%d]", s.Weighted, s.Raw))
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		tw.Flush()
	}
	if len(rejected) > 0 {
		fmt.Fprintf(w, "\nRejected nodes:\n")
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "NODE\tPLUGIN\tVERDICT\tREASON")
		for _, row := range rejected {
			plugin := rejectedBy(a, row)
			verdict, reason := "", ""
			if row.Rejected != nil {
				verdict, reason = row.Rejected.Verdict, row.Rejected.Reason
			}
			for _, f := range row.Filter {
				if f.Verdict != explorerv1.VerdictPass && f.Verdict != explorerv1.VerdictSkip && f.Verdict != explorerv1.VerdictNotRun {
					verdict, reason = f.Verdict, f.Reason
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", row.Node, plugin, verdict, reason)
		}
		tw.Flush()
	}
	if a.TruncatedNodes > 0 {
		fmt.Fprintf(w, "(%d more nodes not listed)\n", a.TruncatedNodes)
	}
	for _, r := range pd.Records {
		if ar := r.AdmissionRequest; ar != nil && !ar.Allowed {
			fmt.Fprintf(w, "\nRefused %s at %s by %q: %s\n", ar.Operation, r.Time.UTC().Format("15:04:05"), ar.DeniedBy, ar.Message)
		}
	}
}

// rejectedBy names the plugin that rejected a row's node ("" for a feasible node).
func rejectedBy(a *explorerv1.SchedulingAttempt, row explorerv1.MatrixRow) string {
	if row.Rejected != nil {
		return row.Rejected.Plugin
	}
	for i, f := range row.Filter {
		if f.Verdict != explorerv1.VerdictPass && f.Verdict != explorerv1.VerdictSkip && f.Verdict != explorerv1.VerdictNotRun && i < len(a.FilterPlugins) {
			return a.FilterPlugins[i].Name
		}
	}
	return ""
}
