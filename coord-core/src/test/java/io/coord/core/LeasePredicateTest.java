package io.coord.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.LeasePredicate.Decision;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

class LeasePredicateTest {

    @Test
    void zeroLeasesIsRejectedWithTheValue() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LeasePredicate.maxLeases(0));
        assertEquals("maxLeases must be >= 1: 0", e.getMessage());
    }

    @Test
    void negativeLeasesIsRejectedWithTheValue() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> LeasePredicate.maxLeases(-3));
        assertEquals("maxLeases must be >= 1: -3", e.getMessage());
    }

    @Test
    void singleLeaseGoesToTheHead() {
        Decision decision = LeasePredicate.maxLeases(1).evaluate(queue(4), 0);

        assertTrue(decision.granted());
        assertEquals(List.of(), decision.watch());
    }

    @Test
    void singleLeaseWaiterWatchesOnlyItsImmediatePredecessor() {
        List<SequenceNode> children = queue(4);

        Decision decision = LeasePredicate.maxLeases(1).evaluate(children, 2);

        assertFalse(decision.granted());
        assertEquals(List.of(children.get(1)), decision.watch());
    }

    @Test
    void threeLeasesGoToTheFirstThree() {
        List<SequenceNode> children = queue(6);
        LeasePredicate predicate = LeasePredicate.maxLeases(3);

        for (int i = 0; i < 3; i++) {
            Decision decision = predicate.evaluate(children, i);
            assertTrue(decision.granted(), "index " + i);
            assertEquals(List.of(), decision.watch(), "index " + i);
        }
        assertFalse(predicate.evaluate(children, 3).granted());
    }

    @Test
    void threeLeaseWaiterWatchesItsThreeNearestPredecessors() {
        List<SequenceNode> children = queue(7);

        Decision decision = LeasePredicate.maxLeases(3).evaluate(children, 5);

        assertFalse(decision.granted());
        assertEquals(List.of(children.get(2), children.get(3), children.get(4)), decision.watch());
    }

    @Test
    void ourIndexOutsideTheQueueIsRejected() {
        List<SequenceNode> children = queue(3);
        LeasePredicate predicate = LeasePredicate.maxLeases(2);

        assertThrows(IndexOutOfBoundsException.class, () -> predicate.evaluate(children, 3));
        assertThrows(IndexOutOfBoundsException.class, () -> predicate.evaluate(children, -1));
        assertThrows(IndexOutOfBoundsException.class, () -> predicate.evaluate(List.of(), 0));
    }

    @Test
    void grantedDecisionCannotWatchAnything() {
        List<SequenceNode> watch = queue(1);

        assertThrows(IllegalArgumentException.class, () -> new Decision(true, watch));
    }

    @Test
    void refusedDecisionMustWatchSomething() {
        assertThrows(IllegalArgumentException.class, () -> new Decision(false, List.of()));
        assertThrows(IllegalArgumentException.class, () -> Decision.waitFor(List.of()));
    }

    @Test
    void grantFactoryWatchesNothing() {
        Decision decision = Decision.grant();

        assertTrue(decision.granted());
        assertEquals(List.of(), decision.watch());
    }

    @Test
    void watchListIsACopyThatCannotBeChanged() {
        List<SequenceNode> source = new ArrayList<>(queue(2));
        Decision decision = Decision.waitFor(source);

        source.clear();

        assertEquals(queue(2), decision.watch());
        assertThrows(UnsupportedOperationException.class, () -> decision.watch().clear());
    }

    @Test
    void watchListDoesNotFollowChangesToTheQueue() {
        List<SequenceNode> children = new ArrayList<>(queue(5));
        Decision decision = LeasePredicate.maxLeases(2).evaluate(children, 4);

        children.remove(3);

        assertEquals(List.of(node(2), node(3)), decision.watch());
        assertThrows(UnsupportedOperationException.class, () -> decision.watch().add(node(9)));
    }

    private static List<SequenceNode> queue(int size) {
        List<SequenceNode> children = new ArrayList<>();
        for (int i = 0; i < size; i++) {
            children.add(node(i));
        }
        return List.copyOf(children);
    }

    private static SequenceNode node(int sequence) {
        return SequenceNode.parse(String.format("lock-%010d", sequence)).orElseThrow();
    }
}
