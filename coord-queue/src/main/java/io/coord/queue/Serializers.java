package io.coord.queue;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/** The serializers behind {@link QueueSerializer}'s factories. */
final class Serializers {
    static final QueueSerializer<byte[]> BYTES = new QueueSerializer<>() {
        @Override
        public byte[] serialize(byte[] item) {
            // A copy, so that a caller who reuses its array after offer() cannot change what was checked.
            return Arrays.copyOf(item, item.length);
        }

        @Override
        public byte[] deserialize(byte[] bytes) {
            return bytes;
        }

        @Override
        public String toString() {
            return "QueueSerializer.bytes()";
        }
    };

    static final QueueSerializer<String> UTF_8 = new QueueSerializer<>() {
        @Override
        public byte[] serialize(String item) {
            return item.getBytes(StandardCharsets.UTF_8);
        }

        @Override
        public String deserialize(byte[] bytes) {
            return new String(bytes, StandardCharsets.UTF_8);
        }

        @Override
        public String toString() {
            return "QueueSerializer.utf8()";
        }
    };

    private Serializers() {}
}
