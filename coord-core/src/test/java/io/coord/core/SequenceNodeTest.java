package io.coord.core;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class SequenceNodeTest {

    private static final String UUID = "3f2b8c1e-9a4d-4e7b-8c2f-1d5e6a7b8c9d";

    @Test
    void protectedLockNameYieldsPrefixSequenceAndProtectionId() {
        String name = "_c_" + UUID + "-lock-0000000042";

        SequenceNode node = SequenceNode.parse(name).orElseThrow();

        assertEquals(name, node.name());
        assertEquals("lock-", node.prefix());
        assertEquals(42L, node.sequence());
        assertEquals(Optional.of(UUID), node.protectionId());
    }

    @Test
    void unprotectedQueueNameHasNoProtectionId() {
        SequenceNode node = SequenceNode.parse("qn-0000000007").orElseThrow();

        assertEquals("qn-0000000007", node.name());
        assertEquals("qn-", node.prefix());
        assertEquals(7L, node.sequence());
        assertEquals(Optional.empty(), node.protectionId());
    }

    @Test
    void curatorLatchNameIsParsed() {
        SequenceNode node =
                SequenceNode.parse("_c_" + UUID + "-latch-0000000001").orElseThrow();

        assertEquals("latch-", node.prefix());
        assertEquals(1L, node.sequence());
        assertEquals(Optional.of(UUID), node.protectionId());
    }

    @Test
    void readAndWriteLockNamesKeepTheirRolePrefix() {
        SequenceNode reader = SequenceNode.parse("_c_" + UUID + "-R-0000000003").orElseThrow();
        SequenceNode writer = SequenceNode.parse("_c_" + UUID + "-W-0000000004").orElseThrow();

        assertEquals("R-", reader.prefix());
        assertEquals(3L, reader.sequence());
        assertEquals(Optional.of(UUID), reader.protectionId());
        assertEquals("W-", writer.prefix());
        assertEquals(4L, writer.sequence());
        assertEquals(Optional.of(UUID), writer.protectionId());
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "lock-12",
                "lock-00000000x1",
                "",
                "abc",
                "lock-000000001a",
                "lock--000000000",
                "lock-9999999999",
                "lock2147483648",
                "lock--2147483649"
            })
    void nameWithoutTenDigitSuffixIsNotASequenceNode(String name) {
        assertEquals(Optional.empty(), SequenceNode.parse(name), name);
    }

    @Test
    void bareTenDigitNameHasEmptyPrefix() {
        SequenceNode node = SequenceNode.parse("0000000005").orElseThrow();

        assertEquals("", node.prefix());
        assertEquals(5L, node.sequence());
        assertEquals(Optional.empty(), node.protectionId());
    }

    @Test
    void largestSequenceZooKeeperCanAssignIsParsed() {
        SequenceNode node = SequenceNode.parse("lock-2147483647").orElseThrow();

        assertEquals(Integer.MAX_VALUE, node.sequence());
    }

    @Test
    void namesZooKeeperGivesAfterItsCounterWrappedAreParsedAsNegative() {
        SequenceNode lowest = parse("_c_" + UUID + "-lock--2147483648");
        assertEquals("lock-", lowest.prefix());
        assertEquals(Integer.MIN_VALUE, lowest.sequence());
        assertEquals(Optional.of(UUID), lowest.protectionId());

        assertEquals(-1_500_000_000L, parse("lock--1500000000").sequence());
        assertEquals("lock-", parse("lock--1500000000").prefix());
        assertEquals(1_500_000_000L, parse("lock-1500000000").sequence(), "one dash: a positive number");
        assertEquals(-999_999_999L, parse("_c_" + UUID + "-W--999999999").sequence());
        assertEquals("W-", parse("_c_" + UUID + "-W--999999999").prefix());
        assertEquals(-1L, parse("R--000000001").sequence());
        assertEquals("R-", parse("R--000000001").prefix());
        assertEquals(-1L, parse("-000000001").sequence());
        assertEquals("", parse("-000000001").prefix());
        assertEquals("lock", parse("lock-2147483648").prefix(), "past the range: the dash is a sign");
        // Curator's read/write lock prefixes end in no dash: its wrapped nodes must still be seen.
        assertEquals(-1L, parse("_c_" + UUID + "-__WRIT__-000000001").sequence());
        assertEquals("__WRIT__", parse("_c_" + UUID + "-__WRIT__-000000001").prefix());
    }

    @Test
    void nodesNumberedAcrossTheWrapOfZooKeepersCounterSortInTheOrderTheyWereCreated() {
        List<SequenceNode> expected = new ArrayList<>();
        for (long i = 0; i < 40; i++) {
            int counter = (int) (Integer.MAX_VALUE - 19 + i); // wraps to negative halfway
            expected.add(parse(String.format("_c_%s-%s%010d", UUID, i % 3 == 0 ? "W-" : "R-", counter)));
        }
        // Far from the wrap, but less than 2^31 creates from the rest.
        expected.add(0, parse("lock-1000000000"));
        expected.add(parse("lock--1000000000"));
        for (long seed = 0; seed < 20; seed++) {
            List<SequenceNode> shuffled = new ArrayList<>(expected);
            Collections.shuffle(shuffled, new Random(seed));

            Collections.sort(shuffled);

            assertEquals(expected, shuffled, "seed " + seed);
        }
    }

    @Test
    void nodesOrderBySequenceBeforeName() {
        SequenceNode early = parse("_c_" + UUID + "-W-0000000002");
        SequenceNode late = parse("_c_" + UUID + "-R-0000000010");

        assertTrue(early.compareTo(late) < 0, "sequence 2 before 10 whatever the prefix");
        assertTrue(late.compareTo(early) > 0);
        assertEquals(0, early.compareTo(parse("_c_" + UUID + "-W-0000000002")));
    }

    @Test
    void equalSequencesOrderByName() {
        SequenceNode a = parse("a-0000000009");
        SequenceNode b = parse("b-0000000009");

        assertTrue(a.compareTo(b) < 0);
        assertTrue(b.compareTo(a) > 0);
    }

    @Test
    void shuffledQueueSortsIntoSequenceOrder() {
        List<SequenceNode> expected = new ArrayList<>();
        for (int seq = 0; seq < 50; seq++) {
            String role = seq % 3 == 0 ? "W-" : "R-";
            expected.add(parse(String.format("_c_%s-%s%010d", UUID, role, seq * 7L)));
        }
        for (long seed = 0; seed < 20; seed++) {
            List<SequenceNode> shuffled = new ArrayList<>(expected);
            Collections.shuffle(shuffled, new Random(seed));

            Collections.sort(shuffled);

            assertEquals(expected, shuffled, "seed " + seed);
        }
    }

    @Test
    void nullNameIsRejected() {
        assertThrows(NullPointerException.class, () -> SequenceNode.parse(null));
    }

    private static SequenceNode parse(String name) {
        return SequenceNode.parse(name).orElseThrow(() -> new AssertionError("not parsed: " + name));
    }
}
