package io.coord.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The name cache's state machine on its own: no server, just the moves consumers and watches make. */
class NameCacheTest {
    private static final String A = "qn-0000000001";
    private static final String B = "qn-0000000002";
    private static final long OLD = 1;
    private static final long NEW = 2;

    @Test
    void namesAreHandedOutInSequenceOrderOncePerRead() {
        NameCache names = new NameCache();
        assertTrue(names.merge(List.of(B, "not-an-item", A), NEW));

        assertEquals(A, names.next());
        assertEquals(B, names.next());
        assertNull(names.next());
        assertFalse(names.merge(List.of(A, B), NEW), "names being attempted are held out");
        names.attempted(A);
        assertTrue(names.merge(List.of(A, B), NEW), "an attempt that ended leaves the name to the next read");
        assertEquals(A, names.head());
    }

    @Test
    void nameSeenClaimedStepsAsideForOneAttemptThenComesBackAtTheHead() {
        NameCache names = new NameCache();
        names.merge(List.of(A, B), NEW);
        assertEquals(A, names.next());

        assertTrue(names.deferOnFirstSighting(A));
        names.attempted(A);
        assertEquals(B, names.next());
        names.attempted(B);

        assertEquals(A, names.next(), "back at the head after one attempt on the next name");
        assertFalse(names.deferOnFirstSighting(A), "the second sighting asks who holds the claim");
    }

    @Test
    void watchedClaimBringsItsNameBackWhenDeleted() {
        NameCache names = new NameCache();
        names.merge(List.of(A), NEW);
        assertEquals(A, names.next());
        names.watchClaim(A);
        names.attempted(A);

        assertFalse(names.merge(List.of(A), NEW), "a read never brings back a name claimed elsewhere");
        assertTrue(names.unwatchClaim(A, true));
        assertEquals(A, names.head());
    }

    @Test
    void readNeverBringsBackANameHeldHereOnTheCurrentSession() {
        NameCache names = new NameCache();
        names.merge(List.of(A), NEW);
        assertEquals(A, names.next());
        names.holdHere(A, NEW, NEW);
        names.attempted(A);

        assertFalse(names.merge(List.of(A), NEW));
        assertTrue(names.holds(A, NEW));
        names.releasing(A, NEW, NEW);
        assertFalse(names.merge(List.of(A), NEW), "nor one whose release is not yet confirmed");
        assertTrue(names.released(A, NEW));
        assertEquals(A, names.head());
    }

    @Test
    void claimOfAnEndedSessionNeverTouchesANewerClaimOnTheSameName() {
        NameCache names = new NameCache();
        names.merge(List.of(A), OLD);
        assertEquals(A, names.next());
        names.holdHere(A, OLD, OLD);
        names.attempted(A);

        names.sessionEnded(NEW);
        assertEquals(A, names.next(), "the old claim died with its session");
        names.holdHere(A, NEW, NEW);
        names.attempted(A);

        names.holdHere(A, OLD, NEW);
        names.releasing(A, OLD, NEW);
        assertFalse(names.released(A, OLD));
        names.dropHeld(A, OLD);
        assertTrue(names.holds(A, NEW));
        assertFalse(names.merge(List.of(A), NEW));
    }
}
