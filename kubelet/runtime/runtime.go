// Package runtime is the kubelet's CRI-shaped view of a container runtime: pod sandboxes,
// containers, exec and images. The containerd implementation (NewContainerd) is what real
// nodes use; Fake is an in-memory one for unit tests of the pod worker and for hollow nodes.
//
// Everything a restarted kubelet needs to adopt running pods is stored in the runtime's own
// labels (pod uid, container name, attempt, sandbox id, pod IP, log path), never only in
// kubelet memory.
package runtime

import (
	"context"
	"time"
)

// PodRef identifies the pod a sandbox or container belongs to.
type PodRef struct {
	UID       string
	Namespace string
	Name      string
}

// SandboxConfig describes a pod sandbox: the pause container that owns the pod's network,
// IPC and UTS namespaces.
type SandboxConfig struct {
	Pod      PodRef
	Hostname string
	// HostDomain is the pod's domain when it has a subdomain
	// (<subdomain>.<namespace>.svc.<cluster domain>): /etc/hosts then gives its address
	// the fully qualified name first, as upstream's kubelet writes it. Not used on the
	// host network.
	HostDomain string
	Image      string // the pause image
	// HostNetwork runs the pod in the host's network and UTS namespaces (no CNI); the
	// pod's IP is then HostIP.
	HostNetwork bool
	HostIP      string
	// DNS written to the pod's resolv.conf; empty uses the host's.
	ResolvConf []byte
}

// SandboxState is whether a sandbox's pause process runs.
type SandboxState string

const (
	SandboxReady    SandboxState = "Ready"
	SandboxNotReady SandboxState = "NotReady"
)

// Sandbox is a pod sandbox as the runtime reports it.
type Sandbox struct {
	ID        string
	Pod       PodRef
	State     SandboxState
	IP        string
	NetNSPath string
	Pid       uint32
	CreatedAt time.Time
}

// Mount is a bind mount into a container.
type Mount struct {
	HostPath      string
	ContainerPath string
	ReadOnly      bool
}

// Resources are the cgroup limits of a container (zero means unset).
type Resources struct {
	MemoryLimitBytes int64
	CPUQuota         int64  // microseconds per period
	CPUPeriod        uint64 // microseconds
	CPUShares        uint64
}

// Security is a container's security context, resolved from the pod and container levels.
type Security struct {
	RunAsUser, RunAsGroup *int64
	ReadOnlyRootFS        bool
	Privileged            bool
	NoNewPrivileges       bool
	AddCaps, DropCaps     []string // Kubernetes names ("NET_ADMIN", "ALL")
}

// ContainerConfig describes a container to create inside a sandbox.
type ContainerConfig struct {
	Name       string
	Attempt    int // restart count; part of the identity a restarted kubelet adopts
	Image      string
	Command    []string // replaces the image's entrypoint when set
	Args       []string // replaces the image's cmd when set
	Env        []string // KEY=VALUE, appended after the image's
	WorkingDir string
	Mounts     []Mount
	LogPath    string // stdout and stderr go here, in the CRI log format
	// Stdin keeps a stdin open for `kubectl attach`; StdinOnce closes it when the first
	// attached client's input ends; TTY gives the container a terminal.
	Stdin, StdinOnce, TTY bool
	Resources             Resources
	Security              Security
	// TargetContainerID is a running container of the same pod whose PID namespace this
	// one joins (an ephemeral container's targetContainerName, as upstream's
	// NamespaceOption TARGET); empty gives the container a PID namespace of its own.
	TargetContainerID string
	// HostPID and HostIPC put the container in the host's PID and IPC namespaces (the
	// pod's hostPID and hostIPC); HostPID wins over TargetContainerID.
	HostPID, HostIPC bool
}

// ContainerState is the lifecycle state of a container.
type ContainerState string

const (
	ContainerCreated ContainerState = "Created"
	ContainerRunning ContainerState = "Running"
	ContainerExited  ContainerState = "Exited"
	ContainerUnknown ContainerState = "Unknown"
)

// ContainerStatus is a container as the runtime reports it.
type ContainerStatus struct {
	ID         string
	SandboxID  string
	Pod        PodRef
	Name       string
	Attempt    int
	Image      string
	ImageRef   string
	State      ContainerState
	CreatedAt  time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	ExitCode   int32
	OOMKilled  bool
	LogPath    string
}

// ExecResult is the outcome of ExecSync.
type ExecResult struct {
	Stdout, Stderr []byte
	ExitCode       int
}

// Image is an image present on the node.
type Image struct {
	Ref    string // the name it was asked for (normalized)
	Digest string
	Size   int64
}

// PullAuth carries optional registry credentials.
type PullAuth struct {
	Username, Password string
}

// Runtime is the CRI-shaped runtime the kubelet drives. All methods are safe for concurrent use.
type Runtime interface {
	// Version is the runtime name and version, e.g. "containerd://1.6.20".
	Version(ctx context.Context) (string, error)

	// RunPodSandbox creates and starts a sandbox, networking included, and returns it.
	// On error nothing is left behind.
	RunPodSandbox(ctx context.Context, cfg SandboxConfig) (*Sandbox, error)
	// StopPodSandbox stops every container of the sandbox, the pause process, and tears down
	// its network (CNI DEL, IP released). Stopping a stopped sandbox is not an error.
	StopPodSandbox(ctx context.Context, id string) error
	// RemovePodSandbox removes a stopped sandbox and its containers.
	RemovePodSandbox(ctx context.Context, id string) error
	// ListSandboxes lists the sandboxes of the pod with podUID, or all when podUID is empty.
	ListSandboxes(ctx context.Context, podUID string) ([]Sandbox, error)
	// ListPod is ListSandboxes and ListContainers of one pod at once (a pod worker's view).
	ListPod(ctx context.Context, podUID string) ([]Sandbox, []ContainerStatus, error)

	CreateContainer(ctx context.Context, sandboxID string, cfg ContainerConfig) (string, error)
	StartContainer(ctx context.Context, id string) error
	// StopContainer sends SIGTERM, then SIGKILL once timeout has passed, and waits for exit.
	StopContainer(ctx context.Context, id string, timeout time.Duration) error
	RemoveContainer(ctx context.Context, id string) error
	// ListContainers lists the containers of the pod with podUID, or all when podUID is empty.
	ListContainers(ctx context.Context, podUID string) ([]ContainerStatus, error)
	ContainerStatus(ctx context.Context, id string) (*ContainerStatus, error)
	// ExecSync runs cmd in a running container and waits for it, at most timeout.
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*ExecResult, error)

	// PullImage fetches and unpacks ref and returns its digest.
	PullImage(ctx context.Context, ref string, auth *PullAuth) (string, error)
	// ImageStatus returns the image, or nil when it is not present.
	ImageStatus(ctx context.Context, ref string) (*Image, error)
}
