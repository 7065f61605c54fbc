package io.coord.queue;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

/** The name cache's state machine on its own: no server, just the moves consumers and watches make. */
class NameCacheTest {
    private static final String A = "qs-0000000001";
    private static final String B = "qs-0000000002";
    private static final String BIG = "qn-0000000003";
    private static final String C = "qs-0000000004";
    private static final long OLD = 1;
    private static final long NEW = 2;

    @Test
    void namesAreHandedOutInSequenceOrderOncePerRead() {
        NameCache names = new NameCache();
        assertTrue(names.merge(List.of(B, "not-an-item", A), NEW, names.readSent()));

        assertEquals(List.of(A), names.take(1, 100));
        assertEquals(List.of(B), names.take(1, 100));
        assertEquals(List.of(), names.take(1, 100));
        assertFalse(names.merge(List.of(A, B), NEW, names.readSent()), "names being taken are held out");
        names.putBack(A);
        assertEquals(A, names.head());
    }

    @Test
    void aBatchIsARunOfSmallItemsOrOneItemOfAnySize() {
        NameCache names = new NameCache();
        names.merge(List.of(A, B, BIG, C), NEW, names.readSent());

        assertEquals(List.of(A, B), names.take(10, 100), "a batch stops before an item of unknown size");
        assertEquals(List.of(BIG), names.take(10, 100), "which goes alone");
        assertEquals(List.of(C), names.take(10, 100));
        names.putBack(A);
        names.putBack(B);
        assertEquals(List.of(A), names.take(10, 1), "no more small items than one reply can carry");
    }

    @Test
    void aGoneNameIsNotBroughtBackByAReadSentBeforeItWent() {
        NameCache names = new NameCache();
        names.merge(List.of(A, B), NEW, names.readSent());
        names.take(2, 100);
        long sentBefore = names.readSent();
        names.gone(A);
        names.putBack(B);

        assertFalse(names.merge(List.of(A, B), NEW, sentBefore), "a stale listing still names A");
        assertEquals(List.of(B), names.take(2, 100));
        names.merge(List.of(B), NEW, names.readSent());
        assertTrue(names.merge(List.of(A), NEW, names.readSent()), "once a read no longer lists it, it is forgotten");
    }

    @Test
    void aReadSentAfterANameWentThatStillListsItFindsANewItemOfThatName() {
        NameCache names = new NameCache();
        names.merge(List.of(A), NEW, names.readSent());
        names.take(1, 100);
        names.gone(A);

        assertTrue(names.merge(List.of(A), NEW, names.readSent()), "the queue was reset, and A made again");
        assertEquals(A, names.head());
    }

    @Test
    void watchedClaimBringsItsNameBackWhenDeleted() {
        NameCache names = new NameCache();
        names.merge(List.of(A), NEW, names.readSent());
        names.take(1, 100);
        names.watch(A);

        assertFalse(
                names.merge(List.of(A), NEW, names.readSent()), "a read never brings back a name claimed elsewhere");
        assertTrue(names.claimDeleted(A));
        assertEquals(A, names.head());
        assertFalse(names.claimDeleted(A), "only a watched name comes back");
    }

    @Test
    void aClaimOfOursHoldsTheNameUntilReleasedOrAcked() {
        NameCache names = new NameCache();
        names.merge(List.of(A, B), NEW, names.readSent());
        names.take(2, 100);
        names.held(A, NEW);
        names.held(B, NEW);

        assertFalse(names.merge(List.of(A, B), NEW, names.readSent()));
        assertFalse(names.released(A, OLD), "a release of another session's claim does not speak for this one");
        assertTrue(names.released(A, NEW));
        names.acked(B, NEW);
        assertEquals(List.of(A), names.take(2, 100));
        assertNull(names.head());
    }

    @Test
    void theEndOfASessionFreesItsClaimsAndClaimWatches() {
        NameCache names = new NameCache();
        names.merge(List.of(A, B, C), OLD, names.readSent());
        names.take(3, 100);
        names.held(A, OLD);
        names.watch(B);
        names.held(C, NEW);

        names.sessionEnded(NEW);

        assertEquals(List.of(A, B), names.take(3, 100), "C is held by a claim of the current session");
    }

    @Test
    void aReadBringsBackANameHeldByAClaimOfAnEndedSession() {
        NameCache names = new NameCache();
        names.merge(List.of(A), OLD, names.readSent());
        names.take(1, 100);
        names.held(A, OLD);

        assertTrue(names.merge(List.of(A), NEW, names.readSent()));
        assertEquals(A, names.head());
    }

    @Test
    void aResetVoidsWhatTheNamesMeantBefore() {
        NameCache names = new NameCache();
        names.merge(List.of(A, B, C), NEW, names.readSent());
        assertEquals(List.of(A, B, C), names.take(3, 100));
        names.gone(A);
        names.putBack(B);
        long readAhead = names.epoch();
        names.keepData(B, new byte[] {1}, readAhead);

        names.reset();
        assertTrue(names.merge(List.of(A, B), NEW, names.readSent()), "A names a new item");
        assertTrue(names.putBack(C), "a name a local consumer holds is kept");
        assertEquals(List.of(A, B, C), names.take(3, 100));
        assertNull(names.takeData(B), "data read under the old parent is dropped");
        names.putBack(B);
        names.keepData(B, new byte[] {2}, readAhead);
        assertEquals(List.of(B), names.take(1, 100));
        assertNull(names.takeData(B), "and so is data a read sent before the reset brings after it");
    }
}
