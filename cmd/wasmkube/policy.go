package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"

	policyv1alpha1 "github.com/wasmkube/wasmkube/core/apis/policy/v1alpha1"
	"github.com/wasmkube/wasmkube/core/controller/wasmpolicy"
	"github.com/wasmkube/wasmkube/plugins/wasmpolicy/report"
)

func init() {
	policyCmd := &cobra.Command{Use: "policy", Short: "Revisions of WasmPolicies: history and rollback"}
	var kubeconfig string
	var to int64
	clients := func() (kubernetes.Interface, dynamic.Interface, error) {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.ExplicitPath = kubeconfig
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
		if err != nil {
			return nil, nil, fmt.Errorf("kubeconfig: %w", err)
		}
		c, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, nil, err
		}
		d, err := dynamic.NewForConfig(cfg)
		return c, d, err
	}
	historyCmd := &cobra.Command{
		Use:   "history NAME",
		Short: "List a WasmPolicy's revisions (the last 10 specs it had)",
		Long: `List the revisions the wasmpolicy controller keeps of a WasmPolicy (ControllerRevisions in
` + wasmpolicy.RevisionNamespace + `, the last ` + fmt.Sprint(wasmpolicy.HistoryLimit) + `): number, age, hook, mode, module, and the
kubernetes.io/change-cause annotation the policy had. The current one is marked with *.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, d, err := clients()
			if err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			p, revs, err := policyRevisions(ctx, c, d, args[0])
			if err != nil {
				return err
			}
			return printHistory(cmd.OutOrStdout(), p, revs, time.Now())
		},
	}
	rollbackCmd := &cobra.Command{
		Use:   "rollback NAME",
		Short: "Put a WasmPolicy's spec back to an earlier revision",
		Long: `Replace a WasmPolicy's spec with the one of an earlier revision (default: the one before the
current), as kubectl rollout undo does for a Deployment. The change is a new generation that
every component loads as any other; the revision is renumbered as the newest. Setting
spec.revision: N on the object does the same through the controller.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, d, err := clients()
			if err != nil {
				return err
			}
			ctx, cancel := signalContext()
			defer cancel()
			n, err := rollbackPolicy(ctx, c, d, args[0], to)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wasmpolicy.%s/%s rolled back to revision %d\n", policyv1alpha1.GroupName, args[0], n)
			return nil
		},
	}
	for _, c := range []*cobra.Command{historyCmd, rollbackCmd} {
		c.Flags().StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	}
	rollbackCmd.Flags().Int64Var(&to, "to-revision", 0, "the revision to go back to (default: the one before the current)")
	policyCmd.AddCommand(historyCmd, rollbackCmd)
	rootCmd.AddCommand(policyCmd)
}

// policyRevisions reads a policy and its revisions, oldest first.
func policyRevisions(ctx context.Context, c kubernetes.Interface, d dynamic.Interface, name string) (*policyv1alpha1.WasmPolicy, []*appsv1.ControllerRevision, error) {
	u, err := d.Resource(report.PoliciesResource).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("wasmpolicy %s: %w", name, err)
	}
	p := &policyv1alpha1.WasmPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, p); err != nil {
		return nil, nil, fmt.Errorf("wasmpolicy %s: %w", name, err)
	}
	list, err := c.AppsV1().ControllerRevisions(wasmpolicy.RevisionNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: labels.SelectorFromSet(labels.Set{wasmpolicy.PolicyUIDLabel: string(p.UID)}).String()})
	if err != nil {
		return nil, nil, fmt.Errorf("revisions of wasmpolicy %s: %w", name, err)
	}
	revs := make([]*appsv1.ControllerRevision, len(list.Items))
	for i := range list.Items {
		revs[i] = &list.Items[i]
	}
	return p, wasmpolicy.SortRevisions(revs), nil
}

func printHistory(w io.Writer, p *policyv1alpha1.WasmPolicy, revs []*appsv1.ControllerRevision, now time.Time) error {
	if len(revs) == 0 {
		return fmt.Errorf("wasmpolicy %s has no revisions yet: the wasmpolicy controller (in the controller manager) records them", p.Name)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REVISION\tAGE\tHOOK\tMODE\tMODULE\tCHANGE-CAUSE")
	for _, r := range revs {
		s, err := wasmpolicy.RevisionSpec(r)
		if err != nil {
			return err
		}
		mark := ""
		if r.Revision == p.Status.Revision {
			mark = " *"
		}
		mod := s.Module.Image
		if mod == "" {
			mod = "file:" + s.Module.File
		}
		cause := r.Annotations[wasmpolicy.ChangeCauseAnnotation]
		if cause == "" {
			cause = "<none>"
		}
		fmt.Fprintf(tw, "%d%s\t%s\t%s\t%s\t%s\t%s\n", r.Revision, mark, duration.HumanDuration(now.Sub(r.CreationTimestamp.Time)), s.Hook, s.Mode, mod, cause)
	}
	return tw.Flush()
}

// rollbackPolicy puts revision to's spec (0: the one before the current) back on the
// policy and returns the revision's number.
func rollbackPolicy(ctx context.Context, c kubernetes.Interface, d dynamic.Interface, name string, to int64) (int64, error) {
	var n int64
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, revs, err := policyRevisions(ctx, c, d, name)
		if err != nil {
			return err
		}
		r, err := wasmpolicy.RollbackTarget(revs, p.Status.Revision, to)
		if err != nil {
			return fmt.Errorf("wasmpolicy %s: %w", name, err)
		}
		s, err := wasmpolicy.RevisionSpec(r)
		if err != nil {
			return err
		}
		p.Spec = *s
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(p)
		if err != nil {
			return err
		}
		if _, err := d.Resource(report.PoliciesResource).Update(ctx, &unstructured.Unstructured{Object: m}, metav1.UpdateOptions{FieldManager: "wasmkube-policy-rollback"}); err != nil {
			return err
		}
		n = r.Revision
		return nil
	})
	return n, err
}
