package io.coord.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.LeasePredicate.Decision;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The waiting rule of the predecessor-watch engine: a waiter reads the children once, then only prunes the nodes it learns are gone. These
 * properties check, over random histories, that a grant on the pruned snapshot is never premature and that a refusal
 * which misses a free slot always watches a node that is already gone, so the waiter wakes at once.
 */
class PruningPropertyTest {

    private static final int SEEDS = 3_000;
    private static final String WRITE = "W-";
    private static final String READ = "R-";
    private static final String LOCK = "lock-";
    private static final Map<Boolean, List<Scenario>> SCENARIOS = new ConcurrentHashMap<>();

    /** The read lock's rule: granted iff no writer precedes us; otherwise watch the nearest writer before us. */
    private static final LeasePredicate READER = (children, ourIndex) -> {
        Objects.checkIndex(ourIndex, children.size());
        for (int i = ourIndex - 1; i >= 0; i--) {
            if (children.get(i).prefix().equals(WRITE)) {
                return Decision.waitFor(List.of(children.get(i)));
            }
        }
        return Decision.grant();
    };

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 5})
    void semaphoreGrantedOnPrunedSnapshotIsGrantedOnFreshQueue(int maxLeases) {
        Outcomes outcomes = checkSafety(LeasePredicate.maxLeases(maxLeases), false);

        outcomes.assertNotVacuous("maxLeases(" + maxLeases + ")");
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 5})
    void semaphoreWaiterThatMissesAFreePermitWatchesADeletedNode(int maxLeases) {
        Outcomes outcomes = checkLiveness(LeasePredicate.maxLeases(maxLeases), false);

        outcomes.assertNotVacuous("maxLeases(" + maxLeases + ")");
    }

    @Test
    void readerGrantedOnPrunedSnapshotHasNoLiveWriterBeforeIt() {
        checkSafety(READER, true).assertNotVacuous("reader");
    }

    @Test
    void readerThatMissesItsGrantWatchesADeletedWriter() {
        checkLiveness(READER, true).assertNotVacuous("reader");
    }

    @Test
    void writerAmongReadersIsNeverGrantedEarlyAndNeverSleepsPastItsTurn() {
        LeasePredicate writer = LeasePredicate.maxLeases(1);

        checkSafety(writer, true).assertNotVacuous("writer");
        checkLiveness(writer, true).assertNotVacuous("writer");
    }

    @Test
    void watchingOnlyTheKthPredecessorCanSleepWhileAPermitIsFree() {
        // The rule "watch children[ourIndex - k]" alone: a nearer holder may leave first, and nobody tells us.
        int maxLeases = 2;
        LeasePredicate kthOnly = (children, ourIndex) ->
                ourIndex < maxLeases ? Decision.grant() : Decision.waitFor(List.of(children.get(ourIndex - maxLeases)));

        boolean sleptWithAFreePermit = false;
        for (Scenario s : scenarios(false)) {
            Decision pruned = kthOnly.evaluate(s.pruned(), s.ourIndexInPruned());
            Decision fresh = kthOnly.evaluate(s.fresh(), s.ourIndexInFresh());
            sleptWithAFreePermit |= !pruned.granted()
                    && fresh.granted()
                    && pruned.watch().stream().noneMatch(s.deleted()::contains);
        }

        assertTrue(sleptWithAFreePermit, "the liveness check should tell the k-nearest window from the kth node alone");
    }

    /** Grant on the pruned snapshot implies grant on what a fresh getChildren would return now. */
    private static Outcomes checkSafety(LeasePredicate predicate, boolean readWrite) {
        Outcomes outcomes = new Outcomes();
        for (Scenario s : scenarios(readWrite)) {
            Decision pruned = predicate.evaluate(s.pruned(), s.ourIndexInPruned());
            Decision fresh = predicate.evaluate(s.fresh(), s.ourIndexInFresh());

            if (pruned.granted()) {
                assertTrue(fresh.granted(), () -> "granted early: " + s);
            }
            assertWatchesOnlyPredecessors(pruned, s);
            outcomes.record(pruned, fresh);
        }
        return outcomes;
    }

    /** A refusal on the pruned snapshot that a fresh read would grant watches a node that is already gone. */
    private static Outcomes checkLiveness(LeasePredicate predicate, boolean readWrite) {
        Outcomes outcomes = new Outcomes();
        for (Scenario s : scenarios(readWrite)) {
            Decision pruned = predicate.evaluate(s.pruned(), s.ourIndexInPruned());
            Decision fresh = predicate.evaluate(s.fresh(), s.ourIndexInFresh());

            if (!pruned.granted() && fresh.granted()) {
                // getData with a watch on a deleted node answers NoNode, so the waiter prunes and evaluates again.
                boolean watchesADeletedNode = pruned.watch().stream().anyMatch(s.deleted()::contains);
                assertTrue(
                        watchesADeletedNode,
                        () -> "would sleep with a free slot, watching " + pruned.watch() + ": " + s);
            }
            outcomes.record(pruned, fresh);
        }
        return outcomes;
    }

    /** The histories for seeds 0..SEEDS-1, built once per queue kind and shared by every property. */
    private static List<Scenario> scenarios(boolean readWrite) {
        return SCENARIOS.computeIfAbsent(readWrite, rw -> {
            List<Scenario> all = new ArrayList<>(SEEDS);
            for (long seed = 0; seed < SEEDS; seed++) {
                all.add(Scenario.generate(seed, rw));
            }
            return List.copyOf(all);
        });
    }

    private static void assertWatchesOnlyPredecessors(Decision decision, Scenario s) {
        List<SequenceNode> predecessors = s.pruned().subList(0, s.ourIndexInPruned());
        for (SequenceNode watched : decision.watch()) {
            assertTrue(predecessors.contains(watched), () -> "watches " + watched + " outside its predecessors: " + s);
        }
    }

    /**
     * One random history.
     *
     * @param pruned the snapshot, restricted to our predecessors and us, minus the deletions the waiter learned of
     * @param fresh the live queue now, up to and including our node
     * @param deleted every node deleted since the snapshot was read
     */
    private record Scenario(
            long seed,
            List<SequenceNode> pruned,
            int ourIndexInPruned,
            List<SequenceNode> fresh,
            int ourIndexInFresh,
            Set<SequenceNode> deleted) {

        static Scenario generate(long seed, boolean readWrite) {
            Random random = new Random(seed);
            long sequence = random.nextInt(1_000);

            // The snapshot S as read: sequences rise, with gaps left by nodes that came and went before the read.
            int size = 1 + random.nextInt(16);
            List<SequenceNode> snapshot = new ArrayList<>();
            for (int i = 0; i < size; i++) {
                sequence += random.nextInt(4) == 0 ? 1 + random.nextInt(5) : 1;
                snapshot.add(newNode(random, sequence, readWrite));
            }
            SequenceNode us = snapshot.get(random.nextInt(size));

            // After the read: deletions of any node but ours, and creations that always sort after every node so far.
            List<SequenceNode> live = new ArrayList<>(snapshot);
            Set<SequenceNode> deleted = new HashSet<>();
            int steps = random.nextInt(24);
            for (int step = 0; step < steps; step++) {
                if (random.nextInt(3) < 2 && live.size() > 1) {
                    SequenceNode victim = live.get(random.nextInt(live.size()));
                    if (!victim.equals(us)) {
                        live.remove(victim);
                        deleted.add(victim);
                    }
                } else {
                    sequence += 1 + random.nextInt(3);
                    live.add(newNode(random, sequence, readWrite));
                }
            }

            // The waiter hears of only some deletions (watches it never set, notifications still in flight).
            double learnRate = random.nextDouble();
            List<SequenceNode> pruned = new ArrayList<>();
            for (SequenceNode node : snapshot) {
                boolean learnedGone = deleted.contains(node) && random.nextDouble() < learnRate;
                if (node.sequence() <= us.sequence() && !learnedGone) {
                    pruned.add(node);
                }
            }
            List<SequenceNode> fresh = new ArrayList<>();
            for (SequenceNode node : live) {
                if (node.sequence() <= us.sequence()) {
                    fresh.add(node);
                }
            }

            Scenario scenario = new Scenario(
                    seed,
                    List.copyOf(pruned),
                    pruned.indexOf(us),
                    List.copyOf(fresh),
                    fresh.indexOf(us),
                    Set.copyOf(deleted));
            // The premise the waiting rule rests on: the pruned snapshot is a superset of our live predecessors.
            assertTrue(pruned.containsAll(fresh), () -> "pruned snapshot lost a live predecessor: " + scenario);
            assertEquals(pruned.size() - 1, pruned.indexOf(us), () -> "we are last in the pruned view: " + scenario);
            return scenario;
        }

        private static SequenceNode newNode(Random random, long sequence, boolean readWrite) {
            String prefix = readWrite ? (random.nextInt(3) == 0 ? WRITE : READ) : LOCK;
            UUID protection = new UUID(random.nextLong(), random.nextLong());
            String name = String.format("_c_%s-%s%010d", protection, prefix, sequence);
            SequenceNode node = SequenceNode.parse(name).orElseThrow(() -> new AssertionError("unparsed " + name));
            assertEquals(prefix, node.prefix(), name);
            return node;
        }

        @Override
        public String toString() {
            return "seed " + seed + ", pruned " + sequences(pruned) + " (we are " + ourIndexInPruned + "), fresh "
                    + sequences(fresh) + " (we are " + ourIndexInFresh + "), deleted "
                    + sequences(List.copyOf(deleted));
        }

        private static List<String> sequences(List<SequenceNode> nodes) {
            return nodes.stream().sorted().map(n -> n.prefix() + n.sequence()).toList();
        }
    }

    /** Counts which branches the random cases reached, so a generator that never hits one fails loudly. */
    private static final class Outcomes {
        private int grantedOnPruned;
        private int refusedOnBoth;
        private int refusedOnPrunedOnly;

        void record(Decision pruned, Decision fresh) {
            if (pruned.granted()) {
                grantedOnPruned++;
            } else if (fresh.granted()) {
                refusedOnPrunedOnly++;
            } else {
                refusedOnBoth++;
            }
        }

        void assertNotVacuous(String predicate) {
            String counts = predicate + ": granted " + grantedOnPruned + ", refused on both " + refusedOnBoth
                    + ", refused on pruned only " + refusedOnPrunedOnly;
            int floor = SEEDS / 50;
            assertFalse(grantedOnPruned < floor, counts);
            assertFalse(refusedOnBoth < floor, counts);
            assertFalse(refusedOnPrunedOnly < floor, counts);
        }
    }
}
