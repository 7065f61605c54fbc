package io.coord.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.concurrent.ConcurrentSkipListSet;
import org.junit.jupiter.api.Test;

/**
 * The deletes a client sends again after a reconnect go out in creation order, so that the first node of a lease of
 * several, the one its holder fences writes on, is never deleted after the others.
 */
class DeleteOrderTest {
    @Test
    void sequenceNodesComeInSequenceOrderWhateverTheirPrefixAndOtherNamesLast() {
        String protectedName = "_c_0a4f5c2e-8d1b-4a51-9a37-6f2de5a9c001-lease-0000000012";
        List<String> created = List.of(
                "lease-0000000003",
                "lease-0000000004",
                "lease-0000000010",
                protectedName,
                "R-0000000013",
                "W-0000000100",
                "s-5f1c",
                "slot");
        ConcurrentSkipListSet<String> pending = new ConcurrentSkipListSet<>(ClientContext.CREATION_ORDER);
        for (int i = created.size() - 1; i >= 0; i--) {
            pending.add(created.get(i));
        }
        assertEquals(created, List.copyOf(pending));
    }
}
