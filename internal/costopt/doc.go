// Package costopt is the measuring stick for cost-aware release of idle
// machines: it draws seeded job traces, bills machines as the clouds do,
// computes the least possible bill for a trace with knowledge of the whole
// future, and replays simple online release rules on the same trace. It
// imports nothing of the module, so the fleet manager can be judged against
// it without sharing any of its logic.
//
// # Model
//
// A trace is a list of jobs, each arriving at an offset from the start of
// the trace and needing one machine of one kind for a duration. A machine
// is billed from its create call to its deletion: the alive time is raised
// to the kind's minimum, rounded up to whole billing units and charged at
// the hourly price (Vultr: per started hour, one hour at least; Hot Aisle:
// per started minute, never less than the minimum reservation, which is
// charged even when the machine is deleted earlier with force). A machine
// can run a job once its boot time has passed since the create call, and
// runs one job at a time. Vultr's monthly price cap is ignored (traces are
// far shorter than a month), and so are delete latencies and refusals: a
// refused delete during a minimum reservation does not change a bill that
// charges the minimum anyway.
//
// # The optimum
//
// The optimum knows the whole trace. It may create a machine at any time,
// even before the trace starts, and must start every job exactly at its
// arrival on a machine that has booted and is idle: no job waits. This is
// the best service any policy can give, at the least bill that gives it. An
// online policy, which does not know the future, either finds an idle
// machine when a job arrives (no wait) or creates one (the job waits the
// boot time). A job that waits starts later, on a machine created later,
// whose billing units start later: a later job may then fit in a unit the
// optimum, booting in advance, must pay again, and a policy that makes jobs
// queue for a busy machine can pay less still. So a bill below the optimum
// is possible, and comes from waits. Core gives a bound that holds with
// waits: the optimum of Core(t, w) is below every plan in which no job
// waits longer than w.
//
// Deleting later or creating earlier never lowers a machine's bill, so an
// optimal plan creates each machine a boot time before its first job
// arrives and deletes it when its last job ends. A plan is then a partition
// of the jobs into chains (each job arrives no earlier than the previous
// one ends), a chain costing the billing units of the span from its first
// job's arrival minus the boot time to its last job's end.
//
// Optimum finds the cheapest partition by branch and price:
//
//   - The linear relaxation of the partition problem over all chains is
//     solved by column generation. Because a chain's cost depends only on
//     its first and last job, the cheapest chain in reduced cost for a given
//     first job is found exactly by one sweep over the jobs in arrival
//     order, keeping the best chain value among the jobs ended so far: a
//     longest path in the acyclic "may follow" graph. That is linear in the
//     number of jobs n per first job once the jobs are sorted by end, so a
//     pricing round costs O(n²). The duals are held in a box that moves
//     (box-step stabilization), and the master problem is solved by the
//     revised simplex method with an explicit basis inverse (O(n²) per
//     pivot, a fresh O(n³) inversion every 256 pivots) that falls back to
//     Bland's rule in degenerate runs.
//   - Any duals y give a lower bound: sum(y) plus, for every first job, the
//     least reduced cost of a chain starting there if negative. It holds
//     because a plan's bill is sum(y) plus the reduced costs of its chains
//     and each job starts at most one chain.
//   - When the relaxation is fractional the search branches on a pair of
//     jobs run back to back on one machine: one child forces the pair, the
//     other forbids it, so every plan lies in exactly one child; pricing
//     obeys the decisions. Children start from the parent's basis and duals.
//     A node is dropped when its bound, rounded up to whole units, reaches
//     the best plan found. Leaves are integral relaxations, which are plans.
//
// Hence, when the search ends, the best plan found is optimal. The first
// plan comes from a greedy pass improved by exchanging tails of chains, and
// a dive that fixes the chains the relaxation uses in full. We know no
// polynomial algorithm for the problem, and the search is exponential in the
// worst case; it stops after 2000 nodes and then reports the best plan with a
// lower bound (Optimal.Proven is false). On the bursty traces of
// DefaultWorkload the relaxation is integral or closed by rounding up at the
// root in nearly all cases: 50 jobs take about 10 ms at most and 200 jobs
// over 48 hours about 2 s at most on one core of a 2-core development
// machine.
//
// # Replays
//
// Replay applies simple online rules to a trace and bills the outcome
// without any fleet manager: an arriving job reuses an idle machine (and
// starts at once) or gets a new machine created at its arrival (and waits
// the boot time); an idle machine is deleted after an idle timeout, and,
// under the paid-window rule, not before its paid time runs out.
// DstackRules are dstack's defaults (5 idle minutes, forced deletion).
package costopt
