package io.coord.testkit;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.coord.core.internal.ClientContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.Parameter;

/**
 * A suite split into one class per mode, as the long ones are ({@link InViewMode}, {@link InWatchMode}): each
 * subclass runs in its own mode only, and the fixture finds the mode in the field the superclass declares.
 */
abstract class OneEngineModeCases {
    @RegisterExtension
    static final ZooKeeperFixture zk = new ZooKeeperFixture();

    @Parameter
    EngineMode mode;

    private final EngineMode expected;

    OneEngineModeCases(EngineMode expected) {
        this.expected = expected;
    }

    @Test
    void runsInTheModeOfItsClassOnly() throws Exception {
        assertEquals(expected, mode);
        assertEquals(mode, zk.mode());
        assertEquals(mode == EngineMode.VIEW, ClientContext.of(zk.newClient()).usesViews());
    }
}
