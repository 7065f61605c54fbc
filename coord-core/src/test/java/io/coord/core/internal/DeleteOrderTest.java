package io.coord.core.internal;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
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
        List<String> pending = new ArrayList<>(created);
        Collections.reverse(pending);
        pending.sort(GuaranteedDeletes.CREATION_ORDER);
        assertEquals(created, pending);
    }
}
