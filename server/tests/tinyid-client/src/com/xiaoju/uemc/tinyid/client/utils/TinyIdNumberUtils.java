package com.xiaoju.uemc.tinyid.client.utils;

/**
 * @Author du_imba
 */
public class TinyIdNumberUtils {

    public static int toInt(String str) {
        return toInt(str, 0);
    }

    public static int toInt(String str, int defaultValue) {
        if (str == null) {
            return defaultValue;
        }
        try {
            return Integer.parseInt(str);
        } catch (NumberFormatException nfe) {
            return defaultValue;
        }
    }
}
