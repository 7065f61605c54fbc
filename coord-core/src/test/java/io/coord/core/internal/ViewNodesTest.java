package io.coord.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.coord.core.SequenceNode;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The view's bookkeeping: counting creates against the parent's cversion, and what a miscount means. */
class ViewNodesTest {
    private static String name(String id, long sequence) {
        return String.format("_c_%s-lock-%010d", id, sequence);
    }

    private static final String A = "11111111-1111-1111-1111-111111111111";
    private static final String B = "22222222-2222-2222-2222-222222222222";
    private static final long CZXID = 0x1_0000_0005L;

    @Test
    void theCountAfterAReadIsCreatesNotTheReportedCversion() {
        ViewNodes nodes = new ViewNodes();
        // 10 children created, 8 of them deleted: the Stat reports 2 * 10 - 2 = 18 changes and 2 children.
        nodes.reset(List.of(name(A, 8), name(B, 9)), CZXID, 18, 2);

        assertEquals(ViewNodes.Created.ADDED, nodes.created(name(A, 10)));
        assertEquals(3, nodes.size());
    }

    @Test
    void theCountSurvivesTheReportedCversionOverflowingAndNumbersPastTheCountersEnd() {
        ViewNodes nodes = new ViewNodes();
        // 2^31 - 1 creates, 2 children left: the server reports 2 * creates - 2 in 32 bits, which wrapped to -4.
        nodes.reset(List.of(name(A, Integer.MAX_VALUE - 2), name(B, Integer.MAX_VALUE - 1)), CZXID, -4, 2);

        assertEquals(ViewNodes.Created.ADDED, nodes.created(name(A, Integer.MAX_VALUE)));
        assertEquals(ViewNodes.Created.ADDED, nodes.created(name(B, Integer.MIN_VALUE)), "in flight at the end");
        assertEquals(ViewNodes.Created.ADDED, nodes.created(name(A, Integer.MIN_VALUE + 1)));
        assertEquals(ViewNodes.Created.KNOWN, nodes.created(name(A, Integer.MAX_VALUE)), "a repeated event");
        assertEquals(ViewNodes.Created.MISSED, nodes.created(name(B, Integer.MIN_VALUE + 3)));
        assertEquals(
                List.of(
                        Integer.MAX_VALUE - 2L,
                        Integer.MAX_VALUE - 1L,
                        (long) Integer.MAX_VALUE,
                        (long) Integer.MIN_VALUE,
                        Integer.MIN_VALUE + 1L),
                nodes.upTo(nodes.size() - 1).stream()
                        .map(SequenceNode::sequence)
                        .toList(),
                "in the order they were created");
    }

    @Test
    void nodesNamedAlikeAtTheCountsEndStaySortedAndCanBeDeleted() {
        ViewNodes nodes = new ViewNodes();
        String early = "00000000-0000-0000-0000-000000000000";
        // The count at its end, with one child: 2 * 2147483647 - 1 reported in 32 bits.
        nodes.reset(List.of(name(B, Integer.MAX_VALUE)), CZXID, -3, 1);

        assertEquals(ViewNodes.Created.ADDED, nodes.created(name(early, Integer.MAX_VALUE)), "numbered the same");
        assertEquals(
                List.of(name(early, Integer.MAX_VALUE), name(B, Integer.MAX_VALUE)),
                nodes.upTo(1).stream().map(SequenceNode::name).toList());
        assertTrue(nodes.deleted(name(B, Integer.MAX_VALUE)).isPresent());
        assertTrue(nodes.deleted(name(early, Integer.MAX_VALUE)).isPresent());
        assertEquals(0, nodes.size());
    }

    @Test
    void aCreateNumberedPastTheCountMeansOneWasMissed() {
        ViewNodes nodes = new ViewNodes();
        nodes.reset(List.of(), CZXID, 0, 0);
        assertEquals(ViewNodes.Created.ADDED, nodes.created(name(A, 0)));

        // 1 went unseen (a node this client may not read, say)
        assertEquals(ViewNodes.Created.MISSED, nodes.created(name(B, 2)));
    }

    @Test
    void aRepeatedCreateChangesNothingButAnUnknownOldOneAsksForARead() {
        ViewNodes nodes = new ViewNodes();
        nodes.reset(List.of(), CZXID, 0, 0);
        nodes.created(name(A, 0));
        nodes.created(name(B, 1));

        assertEquals(ViewNodes.Created.KNOWN, nodes.created(name(A, 0)));
        nodes.deleted(name(A, 0));
        assertEquals(ViewNodes.Created.UNCOUNTED, nodes.created(name(A, 0)));
        assertEquals(ViewNodes.Created.UNCOUNTED, nodes.created("config"));
    }

    @Test
    void theParentsDeletionClearsTheViewAndItsRecreationRestartsTheCount() {
        ViewNodes nodes = new ViewNodes();
        nodes.reset(List.of(name(A, 41)), CZXID, 83, 1);
        assertEquals(CZXID, nodes.parentCzxid(), "the read tells which path of this name the view shows");

        assertEquals(1, nodes.parentDeleted().size());
        assertEquals(0, nodes.parentCzxid());
        assertEquals(0, nodes.size());
        assertEquals(ViewNodes.Created.UNCOUNTED, nodes.created(name(B, 0)), "no parent, no count");
        assertTrue(nodes.parentCreated());
        assertEquals(0, nodes.parentCzxid(), "made again, by a create whose zxid no event tells");
        assertFalse(nodes.parentCreated(), "created twice without a delete: the view lost track");
    }

    @Test
    void nodesListedByAReadAreUnconfirmedUntilSeenOrChecked() {
        ViewNodes nodes = new ViewNodes();
        nodes.reset(List.of(name(A, 3)), CZXID, 7, 1);
        nodes.created(name(B, 4));

        assertFalse(nodes.isConfirmed(name(A, 3)));
        assertTrue(nodes.isConfirmed(name(B, 4)), "its create reached us, so its delete will");
        nodes.confirm(name(A, 3));
        assertEquals(List.of(), nodes.unconfirmed());
    }

    @Test
    void ordersBySequenceAndFindsStraysById() {
        ViewNodes nodes = new ViewNodes();
        nodes.reset(List.of(name(B, 6), name(A, 5)), CZXID, 13, 2);
        nodes.created(name(A, 7));

        SequenceNode ours = SequenceNode.parse(name(A, 7)).orElseThrow();
        assertEquals(2, nodes.indexOf(ours));
        assertEquals(
                List.of(name(A, 5), name(B, 6), name(A, 7)),
                nodes.upTo(2).stream().map(SequenceNode::name).toList());
        assertEquals(2, nodes.withId(A).size());
    }
}
