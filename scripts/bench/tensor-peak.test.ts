import * as tf from '@tensorflow/tfjs';
import { describe, expect, it } from 'vitest';
import { TensorPeak } from './tensor-peak.ts';

describe('TensorPeak', () => {
  it('counts each data buffer once, keeps the peak since reset, and forgets disposed buffers', () => {
    const before = tf.zeros([10]); // made before: never counted
    const p = new TensorPeak();
    expect([p.live, p.peak]).toEqual([0, 0]);
    const a = tf.zeros([256]); // float32: 1,024 bytes
    const view = a.reshape([16, 16]); // the same buffer on the CPU backend
    expect(tf.memory().numBytes - 40).toBe(2048);
    expect(p.live).toBe(1024);
    const b = tf.ones([64], 'int32'); // 256 bytes
    expect([p.live, p.peak]).toEqual([1280, 1280]);
    a.dispose();
    expect(p.live).toBe(1280); // the reshape still holds the buffer
    view.dispose();
    b.dispose();
    expect([p.live, p.peak]).toEqual([0, 1280]);
    p.reset();
    expect(p.peak).toBe(0);
    tf.tidy(() => tf.add(tf.ones([8]), tf.ones([8]))).dispose(); // three 32-byte buffers at most
    expect([p.live, p.peak]).toEqual([0, 96]);
    before.dispose();
    expect(p.live).toBe(0);
  });
});
